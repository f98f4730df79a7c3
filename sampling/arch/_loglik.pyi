import numpy as np
from numpy.typing import NDArray

def loglik_terms(r: NDArray[np.float64], r2: NDArray[np.float64], alpha: NDArray[np.float64],
                 nu: float, c0: float, idx: NDArray[np.int64], out: NDArray[np.float64]) -> None: ...
def loglik_grad(r: NDArray[np.float64], r2: NDArray[np.float64], alpha: NDArray[np.float64],
                nu: float, c0: float, dc0: float, idx: NDArray[np.int64],
                out: NDArray[np.float64], grad: NDArray[np.float64]) -> None: ...
def loglik_cv_terms(r: NDArray[np.float64], r2: NDArray[np.float64], alpha: NDArray[np.float64],
                    nu: float, c0: float, idx: NDArray[np.int64], bin_of: NDArray[np.int64],
                    ref_r: NDArray[np.float64], ref_s: NDArray[np.float64],
                    coef: NDArray[np.float64], out: NDArray[np.float64],
                    out_h: NDArray[np.float64]) -> None: ...
def variances(r2: NDArray[np.float64], alpha: NDArray[np.float64], idx: NDArray[np.int64],
              out: NDArray[np.float64]) -> None: ...
