"""Arrays from and to NumPy, linalg.svd, .npy files, and the GLM estimators under scikit-learn."""

import numpy as np
import pytest

import tessera


def test_from_numpy_compute_round_trip(client):
    rng = np.random.default_rng(3)
    for source in (rng.random((300, 40)), np.asfortranarray(rng.random((300, 40))), rng.random((600, 80))[::2, ::2]):
        a = tessera.from_numpy(source, chunks=(64, 16))
        assert a.shape == source.shape and a.nchunks == 5 * 3
        np.testing.assert_array_equal(a.compute(), source)
    v = tessera.from_numpy(np.arange(10.0), chunks=(3,))
    np.testing.assert_array_equal(((v * 2.0) + 1.0).compute(), np.arange(10.0) * 2 + 1)
    x = tessera.from_numpy(rng.random((200, 30)), chunks=(50, 30))
    assert abs(x.sum().compute() - x.compute().sum()) < 1e-9
    np.testing.assert_allclose((x.T @ x).compute(), x.compute().T @ x.compute())
    np.testing.assert_array_equal(x[10:20, 5:7].compute(), x.compute()[10:20, 5:7])
    np.testing.assert_allclose(np.asarray(x.mean(axis=0)), x.compute().mean(axis=0))
    with pytest.raises(tessera.SubmissionError, match="1-D or 2-D"):
        tessera.from_numpy(np.zeros((2, 2, 2)))
    with pytest.raises((tessera.KernelError, tessera.SubmissionError), match="shape|columns|rows"):
        (x @ x).compute()


def test_svd_matches_numpy(client):
    a = np.random.default_rng(5).random((2000, 50))
    u, s, vt = tessera.compute(*tessera.linalg.svd(tessera.from_numpy(a, chunks=(500, 50))))
    np.testing.assert_allclose(s, np.linalg.svd(a, compute_uv=False), rtol=1e-10)
    np.testing.assert_allclose(u @ np.diag(s) @ vt, a, atol=1e-10)


def test_npy_files(client, tmp_path):
    a = np.random.default_rng(9).random((120, 7))
    np.save(tmp_path / "a.npy", a)
    x = tessera.from_npy(str(tmp_path / "a.npy"), chunk_rows=50)
    np.testing.assert_array_equal(x.compute(), a)
    tessera.to_npy(x * 2.0, tmp_path / "b.npy")
    np.testing.assert_array_equal(np.load(tmp_path / "b.npy"), a * 2)


def test_logistic_regression_under_cross_val_score(client):
    from sklearn.linear_model import LogisticRegression as SkLogistic
    from sklearn.model_selection import cross_val_score

    rng = np.random.default_rng(11)
    X = rng.normal(size=(4000, 6))
    beta = np.array([1.0, -2.0, 0.5, 0.0, 1.5, -1.0])
    y = (rng.random(4000) < 1 / (1 + np.exp(-(X @ beta + 0.3)))).astype(float)
    est = tessera.glm.LogisticRegression(solver="lbfgs", regularizer="l2", alpha=1e-3, tol=1e-10)
    scores = cross_val_score(est, X, y, cv=4)
    reference = cross_val_score(SkLogistic(C=1 / (len(X) * 0.75 * 1e-3), tol=1e-10, max_iter=1000), X, y, cv=4)
    np.testing.assert_allclose(scores, reference, atol=0.01)
    est.fit(X, y)
    sk = SkLogistic(C=1 / (len(X) * 1e-3), tol=1e-10, max_iter=1000).fit(X, y)
    np.testing.assert_allclose(est.coef_, sk.coef_.ravel(), rtol=1e-4, atol=1e-6)
    proba = est.predict_proba(X[:5])
    assert proba.shape == (5, 2) and np.allclose(proba.sum(axis=1), 1)
    assert est.get_params()["alpha"] == 1e-3
    assert est.set_params(alpha=0.5).alpha == 0.5
    with pytest.raises(ValueError, match="unknown parameter"):
        est.set_params(C=1.0)


def test_linear_and_poisson_and_bad_data(client):
    rng = np.random.default_rng(13)
    X = rng.normal(size=(3000, 4))
    y = X @ np.array([1.0, 2.0, -1.0, 0.5]) + 3.0 + rng.normal(scale=0.1, size=3000)
    lin = tessera.glm.LinearRegression(solver="newton").fit(X, y)
    np.testing.assert_allclose(lin.coef_, np.linalg.lstsq(np.c_[X, np.ones(3000)], y, rcond=None)[0][:4], rtol=1e-6)
    assert lin.score(X, y) > 0.99
    counts = rng.poisson(np.exp(X @ np.array([0.2, -0.1, 0.3, 0.0]) + 0.5)).astype(float)
    poisson = tessera.glm.PoissonRegression(solver="newton").fit(X, counts)
    assert 0 < poisson.score(X, counts) < 1
    with pytest.raises(tessera.FitError, match="0 or 1|label"):
        tessera.glm.LogisticRegression().fit(X, y)
    with pytest.raises(tessera.SubmissionError, match="solver"):
        tessera.glm.LogisticRegression(solver="magic").fit(X, (y > 3).astype(float))
    with pytest.raises(RuntimeError, match="not fitted"):
        tessera.glm.LinearRegression().predict(X)
