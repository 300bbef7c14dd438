//CL//
## Kepler's equation E - e sin E = M for large arrays (Ford 2009; Danby 1988).
##
## Render parameters (strict_undefined):
##   real    "float" | "double"
##   method  "danby" | "markley" (solve kernel only)
##
## The def ``solver`` emits ``kepler_sincos``, shared with the RV model
## kernels (rvmodel.mako): for |m| <= pi and 0 <= e < 1 it starts at
## E = m + 0.85 e sign(m) (sign(sin m) = sign(m) on [-pi, pi]) and applies
## Danby's quartic-convergence correction (d1, d2, d3 from f, f', f'', f''')
## at most KEPLER_MAX_ITER (10) times. sin E and cos E come from the branch-free
## polynomial ``sincos_cycles``; once a correction d is below KEPLER_TOL
## times f' = 1 - e cos E the step is taken and sin, cos of the new E follow
## from a second-order Taylor update (error |d|^3 / 6, far below one ulp), so
## a converged solve costs one sincos per iteration and none at the end. The
## f' scaling matters near periapsis of nearly parabolic orbits, where the
## true anomaly is 1/f' times more sensitive to E and the iteration converges
## slower (an absolute tolerance left 5e-6 rad in E at e = 1 - 1e-6).
## Never an endless loop.
##
## The kernel ``kepler_solve`` range-reduces any finite M to m in [-pi, pi]
## at rounding level (common.mako's reduce_angle: Cody-Waite, Payne-Hanek
## beyond 2^25 (fp64) / 2^11 (fp32)), solves, and returns E = M + (E_m - m)
## in M's own revolution with the true anomaly's sine and cosine; e outside
## [0, 1) or non-finite input give NaN and a status code.
<%namespace name="common" file="common.mako"/>

<%def name="solver(real)">
<%
    fp64 = real == "double"
    # e = 1 - 1e-6 needs 10 steps from the paper's starter at small M
    # (Ford 2009 also allowed ten)
    max_iter = 10
    # with |d| <= tol f', the Taylor error |d|^3/6 (fp64: 1.7e-19; fp32:
    # 4.5e-12) and the next step's error are below rounding
    tol = "1e-6" if fp64 else "3e-4f"
    inv_two_pi = "0.15915494309189533577" + ("" if fp64 else "f")
%>
#define KEPLER_MAX_ITER ${max_iter}
// The Danby corrections only refine E, whose residual the next step checks,
// so in single precision they use the fast division (a few ulp): the
// converged E is unchanged, measured against the exact division.
% if fp64:
#define KEPLER_DIV(a, b) ((a) / (b))
% else:
#define KEPLER_DIV(a, b) native_divide(a, b)
% endif
#define KEPLER_TOL ((real_t) ${tol})
#define KEPLER_EPS ${"DBL_EPSILON" if fp64 else "FLT_EPSILON"}
#define KEPLER_INV_TWO_PI ((real_t) ${inv_two_pi})

// status codes (clperiod.kepler.KeplerStatus)
#define KEPLER_OK 0
#define KEPLER_BAD_ECCENTRICITY 1
#define KEPLER_NOT_FINITE 2
#define KEPLER_NOT_CONVERGED 3

// E, sin E, cos E for |m| <= pi, 0 <= e < 1; KEPLER_OK or KEPLER_NOT_CONVERGED
inline char kepler_sincos(const real_t m, const real_t e,
                          real_t *big_e_out, real_t *sin_out, real_t *cos_out)
{
    real_t big_e = m + (real_t) 0.85 * e * sign(m);
    real_t s, c;
    for (int it = 0; it < KEPLER_MAX_ITER; ++it) {
        sincos_cycles(big_e * KEPLER_INV_TWO_PI, &s, &c);
        const real_t f2 = e * s, f3 = e * c;
        const real_t f = big_e - f2 - m;
        const real_t f1 = 1 - f3;
        const real_t d1 = KEPLER_DIV(-f, f1);
        const real_t d2 = KEPLER_DIV(-f, f1 + (real_t) 0.5 * d1 * f2);
        const real_t d3 = KEPLER_DIV(-f, f1 + (real_t) 0.5 * d2 * f2 + d2 * d2 * f3 * (real_t) (1.0 / 6));
        big_e += d3;
        // converged, or the residual f = -d3 f' is at the rounding level of
        // E - e sin E (near a parabolic periapsis single precision cannot
        // resolve E better: E is then as good as the type allows)
        if (fabs(d3) <= KEPLER_TOL * f1 || fabs(d3) * f1 <= 4 * KEPLER_EPS * fabs(big_e)) {
            const real_t h = (real_t) 0.5 * d3 * d3;
            *sin_out = s + d3 * c - h * s;
            *cos_out = c - d3 * s - h * c;
            *big_e_out = big_e;
            return KEPLER_OK;
        }
    }
    sincos_cycles(big_e * KEPLER_INV_TWO_PI, &s, &c);
    *sin_out = s;
    *cos_out = c;
    *big_e_out = big_e;
    return KEPLER_NOT_CONVERGED;
}
</%def>

## Markley (1995): a cubic starter and one fifth-order correction, a fixed
## cost with no loop (the "fixed-cost" option for fp64). m in [-pi, pi].
<%def name="markley(real)">
inline char kepler_sincos_markley(const real_t m, const real_t e,
                                  real_t *big_e_out, real_t *sin_out, real_t *cos_out)
{
    const real_t pi = (real_t) 3.14159265358979323846;
    const real_t ma = fabs(m);
    const real_t alpha = (3 * pi * pi + (real_t) 1.6 * pi * (pi - ma) / (1 + e)) / (pi * pi - 6);
    const real_t d = 3 * (1 - e) + alpha * e;
    const real_t q = 2 * alpha * d * (1 - e) - ma * ma;
    const real_t r = 3 * alpha * d * (d - 1 + e) * ma + ma * ma * ma;
    const real_t w0 = cbrt(fabs(r) + sqrt(q * q * q + r * r));
    const real_t w = w0 * w0;
    real_t big_e = (2 * r * w / (w * w + w * q + q * q) + ma) / d;
    real_t s, c;
    sincos_cycles(big_e * KEPLER_INV_TWO_PI, &s, &c);
    const real_t f0 = big_e - e * s - ma, f1 = 1 - e * c, f2 = e * s, f3 = e * c;
    const real_t d3 = -f0 / (f1 - (real_t) 0.5 * f0 * f2 / f1);
    const real_t d4 = -f0 / (f1 + (real_t) 0.5 * d3 * f2 + d3 * d3 * f3 * (real_t) (1.0 / 6));
    const real_t d5 = -f0 / (f1 + (real_t) 0.5 * d4 * f2 + d4 * d4 * f3 * (real_t) (1.0 / 6)
                             - d4 * d4 * d4 * f2 * (real_t) (1.0 / 24));
    big_e += d5;
    // sin, cos of E + d5 by Taylor series to d^5 (|d5| < 1e-3: error < 2e-21)
    const real_t d2 = d5 * d5;
    const real_t cd = 1 - d2 * ((real_t) 0.5 - d2 * (real_t) (1.0 / 24));
    const real_t sd = d5 * (1 - d2 * ((real_t) (1.0 / 6) - d2 * (real_t) (1.0 / 120)));
    const real_t sign_m = m < 0 ? (real_t) -1 : (real_t) 1;
    *sin_out = sign_m * (s * cd + c * sd);
    *cos_out = c * cd - s * sd;
    *big_e_out = sign_m * big_e;
    return KEPLER_OK;
}
</%def>

<%def name="solve_kernel(real)">
${common.reduce_angle(real)}
__kernel void kepler_solve(
    __global const real_t *restrict mean_anomaly,
    __global const real_t *restrict eccentricity,
    const long n,
    __global real_t *restrict ecc_anomaly,
    __global real_t *restrict sin_true,
    __global real_t *restrict cos_true,
    __global char *restrict status)
{
    const long i = (long) get_global_id(0);
    if (i >= n)
        return;
    const real_t big_m = mean_anomaly[i], e = eccentricity[i];
    if (!isfinite(big_m) || !isfinite(e)) {
        ecc_anomaly[i] = sin_true[i] = cos_true[i] = (real_t) NAN;
        status[i] = KEPLER_NOT_FINITE;
        return;
    }
    if (!(e >= 0 && e < 1)) {
        ecc_anomaly[i] = sin_true[i] = cos_true[i] = (real_t) NAN;
        status[i] = KEPLER_BAD_ECCENTRICITY;
        return;
    }
    const real_t m = reduce_angle_${real}(big_m);   // big_m - 2 pi k, in [-pi, pi]
    real_t big_e, s, c;
    status[i] = ${"kepler_sincos_markley" if method == "markley" else "kepler_sincos"}(m, e, &big_e, &s, &c);
    const real_t inv_denom = KEPLER_DIV((real_t) 1, 1 - e * c);
    sin_true[i] = sqrt((1 - e) * (1 + e)) * s * inv_denom;
    cos_true[i] = (c - e) * inv_denom;
    ecc_anomaly[i] = big_m + (big_e - m);   // 2 pi k + E: in M's revolution
}
</%def>

${common.prelude(real)}
${solver(real)}
${markley(real)}
${solve_kernel(real)}
