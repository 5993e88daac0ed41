"""Error bounds for comparing two float32 computations that may sum in
different orders (libaccel's LibTorch and oneDNN kernels against torch's, or the
same library on another CPU: AVX2, AVX-512 and AMX kernels block sums
differently). CONTRIBUTING.md's Test section: a K-term sum or product computed
in float32 is within gamma_K |a|.|b| of the exact value (gamma_K ~ K u,
u = 2^-24), so two such computations are within 2 K u |a|.|b| of each other,
whatever order either sums in. The bounds are elementwise, so a value near
zero gets an absolute bound from the magnitudes that made it (an rtol with
atol=0 fails there under any change of order)."""
import numpy as np

U = 2.0 ** -24  # float32 unit roundoff


def product_bound(a, b):
    """2 K u (|a| @ |b|): two float32 products a @ b over K terms."""
    a, b = np.abs(np.asarray(a, np.float64)), np.abs(np.asarray(b, np.float64))
    return 2 * a.shape[-1] * U * (a @ b)


def mean_bound(x, axis=None):
    """Two float32 means of K terms: 2 (K + 1) u mean(|x|) (the sum, then the division)."""
    x = np.abs(np.asarray(x, np.float64))
    k = x.size if axis is None else x.shape[axis]
    return 2 * (k + 1) * U * x.mean(axis=axis)


def assert_within(got, want, bound, what=""):
    """|got - want| <= bound elementwise; the message shows the worst error and the margin."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    bound = np.broadcast_to(np.asarray(bound, np.float64), got.shape)
    error = np.abs(got - want)
    worst = float(error.max()) if error.size else 0.0
    ratio = float((error / np.maximum(bound, 1e-300)).max()) if error.size else 0.0
    print(f"{what}: worst error {worst:.3g}, {ratio:.3g} of the float32 bound")  # shown by pytest -s
    assert np.all(error <= bound), (f"{what}: worst error {worst:.3g}, {ratio:.3g} of the float32 bound "
                                    f"(largest bound {float(bound.max()):.3g})")
    return worst, ratio
