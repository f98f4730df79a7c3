"""The pairwise coreference factor f_theta(x_i, x_j) = theta . phi(x_i, x_j) + b: its feature layout."""
