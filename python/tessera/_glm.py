"""GLM estimators with scikit-learn's API: fit on a Tessera cluster, predict here.

    est = tessera.glm.LogisticRegression(solver="lbfgs", regularizer="l2", alpha=1e-3)
    sklearn.model_selection.cross_val_score(est, X, y, cv=5)

alpha is Tessera's lambda: the objective is (1/n) * sum of losses + alpha * R(beta). X and y may be
NumPy arrays (split into chunk_rows-row partitions on the workers) or tessera Arrays."""

import numpy as np

from . import _tessera
from ._cluster import current_client

_PARAMS = ("solver", "regularizer", "alpha", "l1_ratio", "fit_intercept", "max_iter", "tol", "lbfgs_memory",
           "rho", "adaptive_rho", "over_relaxation", "abstol", "reltol", "chunk_rows", "client")


class _GeneralizedLinearModel:
    _engine_type = None

    def __init__(self, solver="lbfgs", regularizer="none", alpha=0.0, l1_ratio=0.5, fit_intercept=True,
                 max_iter=0, tol=1e-6, lbfgs_memory=10, rho=0.1, adaptive_rho=True, over_relaxation=1.0,
                 abstol=1e-8, reltol=1e-6, chunk_rows=0, client=None):
        # Stored as given (scikit-learn's clone() rebuilds estimators from get_params()).
        self.solver = solver
        self.regularizer = regularizer
        self.alpha = alpha
        self.l1_ratio = l1_ratio
        self.fit_intercept = fit_intercept
        self.max_iter = max_iter
        self.tol = tol
        self.lbfgs_memory = lbfgs_memory
        self.rho = rho
        self.adaptive_rho = adaptive_rho
        self.over_relaxation = over_relaxation
        self.abstol = abstol
        self.reltol = reltol
        self.chunk_rows = chunk_rows
        self.client = client

    def get_params(self, deep=True):
        return {name: getattr(self, name) for name in _PARAMS}

    def set_params(self, **params):
        for name, value in params.items():
            if name not in _PARAMS:
                raise ValueError(f"{type(self).__name__}: unknown parameter {name!r} (known: {', '.join(_PARAMS)})")
            setattr(self, name, value)
        return self

    def __repr__(self):
        changed = {k: v for k, v in self.get_params().items() if k != "client"}
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in changed.items())})"

    def _options(self):
        options = {name: getattr(self, name) for name in _PARAMS if name not in ("alpha", "client")}
        options["lambda_"] = float(self.alpha)
        return options

    def fit(self, X, y):
        client = (self.client or current_client())._open()
        engine = self._engine_type(**self._options())
        if isinstance(X, _tessera.Array):
            engine.fit_arrays(client, X, y)
        else:
            X = np.asarray(X, dtype=np.float64)
            y = np.asarray(y, dtype=np.float64).ravel()
            if X.ndim != 2:
                raise ValueError(f"{type(self).__name__}.fit: X must be 2-D, got {X.ndim} dimensions")
            if len(y) != len(X):
                raise ValueError(f"{type(self).__name__}.fit: X has {len(X)} rows and y {len(y)} values")
            engine.fit(client, X, y)
        self._fitted = engine
        self.coef_ = np.asarray(engine.coef)
        self.intercept_ = float(engine.intercept)
        self.n_features_in_ = len(self.coef_)
        self.n_iter_ = engine.report["iterations"]
        return self

    def _engine(self, what):
        engine = getattr(self, "_fitted", None)
        if engine is None:
            raise RuntimeError(f"{type(self).__name__}.{what}: the estimator is not fitted; call fit first")
        return engine

    def _matrix(self, X, what):
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2:
            raise ValueError(f"{type(self).__name__}.{what}: X must be 2-D, got {X.ndim} dimensions")
        return X

    def decision_function(self, X):
        return np.asarray(self._engine("decision_function").decision_function(self._matrix(X, "decision_function")))

    def predict(self, X):
        return np.asarray(self._engine("predict").predict(self._matrix(X, "predict")))

    @property
    def report(self):
        """How the last fit went: iterations, converged, objective, passes over the data, rounds."""
        return self._engine("report").report


class LogisticRegression(_GeneralizedLinearModel):
    """Binary logistic regression (labels 0 and 1)."""

    _engine_type = _tessera._glm.LogisticRegression
    _estimator_type = "classifier"

    def fit(self, X, y):
        super().fit(X, y)
        self.classes_ = np.array([0.0, 1.0])
        return self

    def predict_proba(self, X):
        p = np.asarray(self._engine("predict_proba").predict_proba(self._matrix(X, "predict_proba")))
        return np.column_stack([1.0 - p, p])

    def score(self, X, y, sample_weight=None):
        """Mean accuracy."""
        return float(np.average(self.predict(X) == np.asarray(y).ravel(), weights=sample_weight))


class LinearRegression(_GeneralizedLinearModel):
    """Least squares (Ridge, Lasso and ElasticNet through regularizer and alpha)."""

    _engine_type = _tessera._glm.LinearRegression
    _estimator_type = "regressor"

    def score(self, X, y, sample_weight=None):
        """R^2, the coefficient of determination."""
        y = np.asarray(y, dtype=np.float64).ravel()
        residual = np.average((y - self.predict(X)) ** 2, weights=sample_weight)
        total = np.average((y - np.average(y, weights=sample_weight)) ** 2, weights=sample_weight)
        return float(1.0 - residual / total) if total > 0 else 0.0


class PoissonRegression(_GeneralizedLinearModel):
    """Poisson regression with the log link (counts)."""

    _engine_type = _tessera._glm.PoissonRegression
    _estimator_type = "regressor"

    def score(self, X, y, sample_weight=None):
        """D^2, the fraction of Poisson deviance explained (as scikit-learn's PoissonRegressor.score)."""
        y = np.asarray(y, dtype=np.float64).ravel()
        mu = self.predict(X)

        def deviance(mean):
            with np.errstate(divide="ignore", invalid="ignore"):
                term = np.where(y > 0, y * np.log(y / mean), 0.0)
            return 2 * np.average(term - (y - mean), weights=sample_weight)

        null = deviance(np.full_like(y, np.average(y, weights=sample_weight)))
        return float(1.0 - deviance(mu) / null) if null > 0 else 0.0


__all__ = ["LinearRegression", "LogisticRegression", "PoissonRegression"]
