"""End-to-end author coreference with Racing-Normal Gibbs (Chen & Ghahramani 2016, Sec. 5.3)."""

__all__ = []
