"""scikit-learn's estimator protocol without importing scikit-learn.

``from crfkit.sklearn import CRF`` then costs no scikit-learn import (about
90 MB of resident memory, measured with scikit-learn 1.9: a fifth of the
tutorial's whole fit). scikit-learn's tools (``clone``, ``GridSearchCV``,
``Pipeline``) need only what is here: ``get_params``/``set_params`` read
from ``__init__``'s signature, and the estimator tags, which are asked of
scikit-learn itself (imported then, since the caller already has it).
"""

from __future__ import annotations

import inspect


class EstimatorParams:
    """``get_params``/``set_params``/``repr`` and tags, as ``sklearn.base.BaseEstimator``."""

    @classmethod
    def _get_param_names(cls) -> list[str]:
        signature = inspect.signature(cls.__init__)
        return sorted(p.name for p in signature.parameters.values()
                      if p.name != "self" and p.kind != p.VAR_KEYWORD)

    def get_params(self, deep: bool = True) -> dict:
        """The constructor parameters and their values (no nested estimators here)."""
        return {name: getattr(self, name) for name in self._get_param_names()}

    def set_params(self, **params):
        """Set constructor parameters; unknown names raise ValueError, as scikit-learn's."""
        valid = self._get_param_names()
        for name, value in params.items():
            if name not in valid:
                raise ValueError(f"Invalid parameter {name!r} for estimator {self!r}. "
                                 f"Valid parameters are: {valid!r}.")
            setattr(self, name, value)
        return self

    def __repr__(self) -> str:
        defaults = {p.name: p.default for p in
                    inspect.signature(type(self).__init__).parameters.values()}
        changed = [f"{name}={value!r}" for name, value in self.get_params().items()
                   if defaults.get(name) is not value and defaults.get(name) != value]
        return f"{type(self).__name__}({', '.join(changed)})"

    def __sklearn_tags__(self):
        from sklearn.base import BaseEstimator

        return BaseEstimator.__sklearn_tags__(self)

    def _get_tags(self) -> dict:  # scikit-learn < 1.6
        from sklearn.base import BaseEstimator

        return BaseEstimator._get_tags(self)

    def _more_tags(self) -> dict:
        return {}
