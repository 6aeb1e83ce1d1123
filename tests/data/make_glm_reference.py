#!/usr/bin/python3
"""Reference coefficients for tests/glm_test.cpp, from scikit-learn (Debian's python3-sklearn).

  /usr/bin/python3 tests/data/make_glm_reference.py     # writes tests/data/glm_*.csv

Features are standardized (mean 0, population standard deviation 1) the same way the test does. Tessera's
objective is (1/n) sum loss + lambda R(beta) with an unpenalized intercept, so scikit-learn's settings are:
LogisticRegression C = 1 / (n lambda) (l1_ratio for elasticnet), Ridge alpha = n lambda, Lasso and
ElasticNet alpha = lambda, PoissonRegressor alpha = lambda. Smooth problems use the newton-cholesky solver:
lbfgs stops at a gradient of 6e-7 on the breast-cancer data even with tol=1e-12.
"""
import os
import warnings

import numpy as np
from sklearn.linear_model import ElasticNet, Lasso, LinearRegression, LogisticRegression, PoissonRegressor, Ridge

HERE = os.path.dirname(os.path.abspath(__file__))
warnings.simplefilter("ignore")


def standardize(x):
    return (x - x.mean(axis=0)) / x.std(axis=0)


def load(name):
    if name == "breast_cancer":
        raw = np.loadtxt(os.path.join(HERE, "breast_cancer.csv"), delimiter=",", skiprows=1)
        return standardize(raw[:, :-1]), raw[:, -1]
    if name == "diabetes":
        x = np.loadtxt(os.path.join(HERE, "diabetes_data_raw.csv"))
        return standardize(x), np.loadtxt(os.path.join(HERE, "diabetes_target.csv"))
    data = np.loadtxt(os.path.join(HERE, "glm_" + name + ".csv"), delimiter=",")
    return data[:, :-1], data[:, -1]


def synthetic():
    rng = np.random.default_rng(20261129)
    n, p = 1000, 6
    beta = np.array([0.8, -0.5, 0.3, 0.0, 0.0, 1.2])
    for family in ("logistic", "poisson"):
        x = rng.normal(size=(n, p))
        eta = 0.25 + x @ beta * (0.5 if family == "poisson" else 1.0)
        y = rng.binomial(1, 1 / (1 + np.exp(-eta))) if family == "logistic" else rng.poisson(np.exp(eta))
        np.savetxt(os.path.join(HERE, "glm_synthetic_" + family + ".csv"), np.column_stack([x, y]), delimiter=",",
                   fmt="%.17g")


def fit(family, regularizer, lam, l1_ratio, x, y):
    n = x.shape[0]
    tight = dict(tol=1e-12, max_iter=1_000_000)
    if family == "logistic":
        if regularizer == "none":
            est = LogisticRegression(penalty=None, solver="newton-cholesky", **tight)
        elif regularizer == "l2":
            est = LogisticRegression(C=1 / (n * lam), solver="newton-cholesky", **tight)
        elif regularizer == "l1":
            est = LogisticRegression(C=1 / (n * lam), penalty="l1", solver="saga", **tight)
        else:
            est = LogisticRegression(C=1 / (n * lam), penalty="elasticnet", l1_ratio=l1_ratio, solver="saga", **tight)
        est.fit(x, y)
        return est.intercept_[0], est.coef_[0]
    if family == "normal":
        est = {"none": lambda: LinearRegression(),
               "l2": lambda: Ridge(alpha=n * lam, tol=1e-14),
               "l1": lambda: Lasso(alpha=lam, tol=1e-14, max_iter=1_000_000),
               "elastic_net": lambda: ElasticNet(alpha=lam, l1_ratio=l1_ratio, tol=1e-14, max_iter=1_000_000)}[regularizer]()
        est.fit(x, y)
        return est.intercept_, est.coef_
    est = PoissonRegressor(alpha=lam if regularizer == "l2" else 0.0, solver="newton-cholesky", tol=1e-12,
                           max_iter=1_000_000)
    est.fit(x, y)
    return est.intercept_, est.coef_


CASES = [  # name, data, family, regularizer, lambda, l1_ratio
    ("breast_cancer_logistic_l2", "breast_cancer", "logistic", "l2", 1 / 569, 0.5),
    ("breast_cancer_logistic_l1", "breast_cancer", "logistic", "l1", 0.01, 0.5),
    ("breast_cancer_logistic_elastic_net", "breast_cancer", "logistic", "elastic_net", 0.01, 0.5),
    ("diabetes_normal_none", "diabetes", "normal", "none", 0.0, 0.5),
    ("diabetes_normal_l2", "diabetes", "normal", "l2", 0.1, 0.5),
    ("diabetes_normal_l1", "diabetes", "normal", "l1", 1.0, 0.5),
    ("diabetes_normal_elastic_net", "diabetes", "normal", "elastic_net", 0.5, 0.3),
    ("diabetes_poisson_l2", "diabetes", "poisson", "l2", 0.01, 0.5),
    ("synthetic_logistic_none", "synthetic_logistic", "logistic", "none", 0.0, 0.5),
    ("synthetic_logistic_l2", "synthetic_logistic", "logistic", "l2", 0.01, 0.5),
    ("synthetic_logistic_l1", "synthetic_logistic", "logistic", "l1", 0.02, 0.5),
    ("synthetic_logistic_elastic_net", "synthetic_logistic", "logistic", "elastic_net", 0.02, 0.5),
    ("synthetic_poisson_none", "synthetic_poisson", "poisson", "none", 0.0, 0.5),
    ("synthetic_poisson_l2", "synthetic_poisson", "poisson", "l2", 0.05, 0.5),
]

if __name__ == "__main__":
    synthetic()
    with open(os.path.join(HERE, "glm_reference.csv"), "w") as out:
        out.write("# name,data,family,regularizer,lambda,l1_ratio,intercept,coefficients...\n")
        for name, data, family, regularizer, lam, l1_ratio in CASES:
            x, y = load(data)
            intercept, coef = fit(family, regularizer, lam, l1_ratio, x, y)
            out.write(",".join([name, data, family, regularizer, repr(lam), repr(l1_ratio), repr(float(intercept))] +
                               [repr(float(c)) for c in coef]) + "\n")
            print(name, "intercept", intercept, "coef[:3]", coef[:3])
