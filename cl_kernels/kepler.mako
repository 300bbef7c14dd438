//CL//
## Kepler's equation E - e sin E = M for large arrays (Ford 2009; Danby 1988).
##
## Render parameters (strict_undefined):
##   real    "float" | "double"
##
## One work-item per element: range-reduce M to [-pi, pi) with a two-part
## 2 pi (Cody-Waite, so M many orbits from the epoch keeps its accuracy), start
## at E = m + 0.85 e sign(sin m), and apply Danby's quartic-convergence
## correction (d1, d2, d3 from f, f', f'', f''') a bounded number of times,
## stopping once the correction no longer changes E. Returns E in M's own
## revolution (E - e sin E = M without reduction) and the true anomaly's sine
## and cosine. 0 <= e < 1 and finite M only: anything else gives NaN and a
## status code, never an endless loop.
<%namespace name="common" file="common.mako"/>
${common.prelude(real)}
<%
    fp64 = real == "double"
    suffix = "" if fp64 else "f"
    # 2 pi = HI + LO with HI in 30 (fp64) / 12 (fp32) bits, so k * HI is exact
    # for |k| below 2^23 / 2^12 revolutions
    two_pi_hi = "6.283185303211212" if fp64 else "6.28125"
    two_pi_lo = "3.968374318722162e-09" if fp64 else "0.0019353072"
    max_iter = 8 if fp64 else 6
    converged = "1e-6" + suffix
%>
#define TWO_PI_HI ((real_t) ${two_pi_hi}${suffix})
#define TWO_PI_LO ((real_t) ${two_pi_lo}${suffix})
#define MAX_ITER ${max_iter}

// status codes (clperiod.kepler.KeplerStatus)
#define KEPLER_OK 0
#define KEPLER_BAD_ECCENTRICITY 1
#define KEPLER_NOT_FINITE 2
#define KEPLER_NOT_CONVERGED 3

__kernel void kepler_solve(
    __global const real_t *restrict mean_anomaly,
    __global const real_t *restrict eccentricity,
    const long n,
    __global real_t *restrict ecc_anomaly,
    __global real_t *restrict sin_true,
    __global real_t *restrict cos_true,
    __global char *restrict status)
{
    const long i = get_global_id(0);
    if (i >= n)
        return;
    const real_t big_m = mean_anomaly[i], e = eccentricity[i];
    if (!isfinite(big_m) || !isfinite(e)) {
        ecc_anomaly[i] = sin_true[i] = cos_true[i] = NAN;
        status[i] = KEPLER_NOT_FINITE;
        return;
    }
    if (!(e >= 0 && e < 1)) {
        ecc_anomaly[i] = sin_true[i] = cos_true[i] = NAN;
        status[i] = KEPLER_BAD_ECCENTRICITY;
        return;
    }
    const real_t k = rint(big_m / (TWO_PI_HI + TWO_PI_LO));
    const real_t m = (big_m - k * TWO_PI_HI) - k * TWO_PI_LO;   // in about [-pi, pi]
    real_t big_e = m + (real_t) 0.85 * e * (sin(m) >= 0 ? (real_t) 1 : (real_t) -1);
    char state = KEPLER_NOT_CONVERGED;
    for (int it = 0; it < MAX_ITER; ++it) {
        const real_t se = e * sin(big_e), ce = e * cos(big_e);
        const real_t f = big_e - se - m;
        const real_t f1 = 1 - ce, f2 = se, f3 = ce;
        const real_t d1 = -f / f1;
        const real_t d2 = -f / (f1 + (real_t) 0.5 * d1 * f2);
        const real_t d3 = -f / (f1 + (real_t) 0.5 * d2 * f2 + d2 * d2 * f3 / 6);
        const real_t next = big_e + d3;
        if (next == big_e || fabs(d3) <= 4 * ${"DBL_EPSILON" if fp64 else "FLT_EPSILON"} * fabs(big_e)) {
            big_e = next;
            state = KEPLER_OK;
            break;
        }
        big_e = next;
    }
    const real_t s = sin(big_e), c = cos(big_e);
    const real_t denom = 1 - e * c;
    sin_true[i] = sqrt((1 - e) * (1 + e)) * s / denom;
    cos_true[i] = (c - e) / denom;
    // reported E lies in M's revolution; a last step that still moved is
    // accurate anyway (quartic convergence), so only a failure to approach
    // the root is flagged
    ecc_anomaly[i] = big_e + (k * TWO_PI_HI + k * TWO_PI_LO);
    status[i] = state == KEPLER_OK || fabs(big_e - e * s - m) <= ${converged} ? KEPLER_OK : state;
}
