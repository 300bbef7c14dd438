//CL//
## SuperSmoother building blocks: running weighted-line windows and the
## single-pass "generalized validation" smoother (seed spec §2.2, §4).
##
## Render parameters (strict_undefined):
##   real    "float" | "double"
##   wg      work-group size of the fused search (frequencies per group)
##   nmax    most points per light curve in the fused search
##   compat  fold as the reference code does (common.fold_phase)
##   arbitrary  fold at frequencies read from an array (common.fold_phase)
##
## The smoother is a Mako def over accessor expressions, so the same code can
## read sorted points from global memory (``sp_smooth_batch`` below) or from
## local memory inside a fused fold-sort-smooth kernel.
<%namespace name="common" file="common.mako"/>
${common.prelude(real)}
<%
    def lit(value):
        """A literal of the kernel's real type."""
        return repr(float(value)) + ("f" if real == "float" else "")
%>

// Running statistics of a weighted straight-line fit to a moving window:
// total weight, weighted means and centred sums (spec §2.2; vyy for §4.2).
typedef struct {
    real_t wt, xbar, ybar, vxx, vxy, vyy;
} window_t;

inline void win_seed(window_t *s, const real_t xi, const real_t eta, const real_t om)
{
    s->wt = om; s->xbar = xi; s->ybar = eta;
    s->vxx = 0; s->vxy = 0; s->vyy = 0;
}

// Add a point: means first, then the sums with the new means (one division
// each way; the reference divides per term, which differs in the last bit).
inline void win_add(window_t *s, const real_t xi, const real_t eta, const real_t om)
{
    const real_t wold = s->wt;
    s->wt = wold + om;
    if (s->wt > 0) {
        const real_t inv = 1 / s->wt;
        s->xbar = (wold * s->xbar + om * xi) * inv;
        s->ybar = (wold * s->ybar + om * eta) * inv;
    }
    if (wold > 0) {
        const real_t f = s->wt * om / wold;
        const real_t dx = xi - s->xbar, dy = eta - s->ybar;
        s->vxx += f * dx * dx;
        s->vxy += f * dx * dy;
        s->vyy += f * dy * dy;
    }
}

// Remove a point: sums first with the old means, then the means.
inline void win_remove(window_t *s, const real_t xi, const real_t eta, const real_t om)
{
    const real_t wold = s->wt;
    s->wt = wold - om;
    if (s->wt > 0) {
        const real_t inv = 1 / s->wt;
        const real_t f = wold * om * inv;
        const real_t dx = xi - s->xbar, dy = eta - s->ybar;
        s->vxx -= f * dx * dx;
        s->vxy -= f * dx * dy;
        s->vyy -= f * dy * dy;
        s->xbar = (wold * s->xbar - om * xi) * inv;
        s->ybar = (wold * s->ybar - om * eta) * inv;
    }
}

inline real_t win_slope(const window_t *s, const real_t vsml)
{
    return s->vxx > vsml ? s->vxy / s->vxx : (real_t) 0;
}

// Leverage per unit weight: 1/wt + (x - xbar)^2 / vxx, each term guarded.
inline real_t win_hat(const window_t *s, const real_t xj, const real_t vsml)
{
    real_t h = s->wt > 0 ? 1 / s->wt : (real_t) 0;
    if (s->vxx > vsml)
        h += (xj - s->xbar) * (xj - s->xbar) / s->vxx;
    return h;
}

## Single-pass smoother of n points sorted by phase x in [0, 1) (spec §4).
## X(i), Y(i), W(i) are accessor expression templates with "{}" for the index
## (0 <= index < n); OUT is an assignment template "{j}" / "{v}" that stores
## the smoothed value v of point j. Periodic windows wrap once: a point taken
## from below index 0 enters with x - 1, from above n - 1 with x + 1.
<%def name="single_pass(X, Y, W, n, alpha, OUT)">
    {
        const int sp_n = ${n};
        const int sp_alpha = (int) fmin(fmax((real_t) (${alpha}), (real_t) 0), (real_t) 10);
        // h = max(2, floor(span n / 2 + 1/2)) for spans 0.05, 0.2, 0.5, in
        // integers (equal to the reference's double expression for every n)
        int sp_h[3];
        sp_h[0] = max(2, (sp_n + 20) / 40);
        sp_h[1] = max(2, (sp_n + 5) / 10);
        sp_h[2] = max(2, (sp_n + 2) / 4);
        if (sp_n <= 9) {
            // h0 = h1 = h2 = 2: the blend is 0/0 (spec §4.4)
            for (int j = 0; j < sp_n; ++j) {
                const real_t v = NAN;
                ${OUT.format(j="j", v="v")};
            }
        } else {
            const real_t scale = ${X.format("3 * (sp_n / 4) - 1")} - ${X.format("sp_n / 4 - 1")};
            const real_t vsml = ${lit(1e-6)} * scale * scale;
            window_t win[3];
            #pragma unroll
            for (int k = 0; k < 3; ++k) {
                const int hk = sp_h[k];
                int i = -hk - 1 + sp_n;
                win_seed(&win[k], ${X.format("i")} - 1, ${Y.format("i")}, ${W.format("i")});
                for (int v = -hk; v < hk; ++v) {
                    const int u = v < 0 ? v + sp_n : v;
                    const real_t shift = v < 0 ? (real_t) -1 : (real_t) 0;
                    win_add(&win[k], ${X.format("u")} + shift, ${Y.format("u")}, ${W.format("u")});
                }
            }
            for (int j = 0; j < sp_n; ++j) {
                #pragma unroll
                for (int k = 0; k < 3; ++k) {
                    const int leaving = j - sp_h[k] - 1;
                    const int uo = leaving < 0 ? leaving + sp_n : leaving;
                    win_remove(&win[k], ${X.format("uo")} + (leaving < 0 ? (real_t) -1 : (real_t) 0),
                               ${Y.format("uo")}, ${W.format("uo")});
                    const int entering = j + sp_h[k];
                    const int ui = entering >= sp_n ? entering - sp_n : entering;
                    win_add(&win[k], ${X.format("ui")} + (entering >= sp_n ? (real_t) 1 : (real_t) 0),
                            ${Y.format("ui")}, ${W.format("ui")});
                }
                const real_t xj = ${X.format("j")}, wj = ${W.format("j")};
                real_t fit[3], score[3];
                #pragma unroll
                for (int k = 0; k < 3; ++k) {
                    const real_t ivxx = win[k].vxx > vsml ? 1 / win[k].vxx : (real_t) 0;
                    const real_t b = win[k].vxy * ivxx;
                    const real_t dxk = xj - win[k].xbar;
                    fit[k] = b * dxk + win[k].ybar;
                    real_t r = win[0].vyy - 2 * b * win[0].vxy + b * b * win[0].vxx;
                    if (k > 0) {
                        const real_t d = win[k].ybar - win[0].ybar - b * (win[k].xbar - win[0].xbar);
                        r += d * d * win[0].wt;
                    }
                    const real_t hat = (win[k].wt > 0 ? 1 / win[k].wt : (real_t) 0)
                                       + dxk * dxk * ivxx;
                    const real_t gap = 1 - wj * hat;
                    score[k] = fabs(r) / (gap * gap);
                }
                real_t gmin = ${lit(1e20)}, big_h = (real_t) sp_h[2];
                #pragma unroll
                for (int k = 0; k < 3; ++k) {
                    if (score[k] < gmin) {
                        gmin = score[k];
                        big_h = (real_t) (sp_h[1] + sp_h[k]) / 2;
                    }
                }
                real_t ratio = sqrt(gmin / score[2]);
                if (ratio < ${lit(1e-7)})  // a NaN ratio stays NaN, as in the reference code
                    ratio = ${lit(1e-7)};
                big_h += (sp_h[2] - big_h) * pown(ratio, 10 - sp_alpha);
                real_t f = big_h - sp_h[1];
                real_t v;
                if (f < 0) {
                    f = f / (real_t) (sp_h[0] - sp_h[1]);
                    v = (1 - f) * fit[1] + f * fit[0];
                } else {
                    f = f / (real_t) (sp_h[2] - sp_h[1]);
                    v = (1 - f) * fit[1] + f * fit[2];
                }
                ${OUT.format(j="j", v="v")};
            }
        }
    }
</%def>

// One work-item per problem: problem p holds points offsets[p] .. offsets[p+1]
// of x (sorted phases), y and w; smo receives the smoothed values.
__kernel void sp_smooth_batch(
    __global const real_t *restrict x,
    __global const real_t *restrict y,
    __global const real_t *restrict w,
    __global const int *restrict offsets,
    const int n_problems,
    const real_t alpha,
    __global real_t *restrict smo)
{
    const int p = get_global_id(0);
    if (p >= n_problems)
        return;
    const int o = offsets[p];
${single_pass("x[o + ({})]", "y[o + ({})]", "w[o + ({})]", "offsets[p + 1] - o", "alpha", "smo[o + {j}] = {v}")}
}

${common.fold_phase(real, compat, arbitrary)}
${common.phase_keys(real, (nmax - 1).bit_length())}

#define SP_WG ${wg}
#define SP_NMAX ${nmax}

// Single-pass SuperSmoother periodogram, fused: one work-group per (object,
// block of SP_WG frequencies), one work-item per frequency. Each work-item
// folds the object's points into its own slice of local memory as packed keys
// (a stable order), sorts the slice with a sequential bitonic network, and
// sweeps the smoother over it, accumulating chi^2 on the fly; phases never
// reach global memory. Slices are interleaved (element i of work-item l at
// i * SP_WG + l) so accesses hit distinct banks. Frequency k0 + j goes to
// power[obj * row_len + col0 + j], j < nf.
__kernel __attribute__((reqd_work_group_size(SP_WG, 1, 1)))
void sp_search_local(
    FOLD_ARGS,
    __global const real_t *restrict pt_y,
    __global const real_t *restrict pt_w,
    __global const int *restrict obj_start,
    __global const int *restrict obj_n,
    __global const real_t *restrict obj_chi0,
    const int blocks_per_object, const int k0, const int nf, const real_t alpha,
    const int row_len, const int col0,
    __global real_t *restrict power)
{
    __local ulong l_key[SP_NMAX * SP_WG];
    __local real_t l_y[SP_NMAX], l_w[SP_NMAX];
    const int lid = get_local_id(0);
    const int obj = get_group_id(0) / blocks_per_object;
    const int j = (get_group_id(0) % blocks_per_object) * SP_WG + lid;
    const int start = obj_start[obj], n = obj_n[obj];
    for (int i = lid; i < n; i += SP_WG) {
        l_y[i] = pt_y[start + i];
        l_w[i] = pt_w[start + i];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (j >= nf)
        return;  // no barrier follows
    int n_pad = 1;
    while (n_pad < n)
        n_pad <<= 1;
    for (int i = 0; i < n; ++i)
        l_key[i * SP_WG + lid] = PHASE_KEY(FOLD(start + i, k0 + j), i);
    // Bitonic network in its all-ascending form (each merge starts with a
    // flip): the virtual padding n .. n_pad - 1 holds +inf keys that never
    // move, so only n keys are stored.
    for (int size = 2; size <= n_pad; size <<= 1) {
        for (int stride = size >> 1; stride > 0; stride >>= 1) {
            for (int i = 0; i < n_pad / 2; ++i) {
                const int lo = 2 * i - (i & (stride - 1));
                const int hi = stride == size >> 1 ? (lo | (size - 1)) - (lo & (stride - 1))
                                                   : lo + stride;
                if (hi < n) {
                    const ulong a = l_key[lo * SP_WG + lid], b = l_key[hi * SP_WG + lid];
                    if (a > b) {
                        l_key[lo * SP_WG + lid] = b;
                        l_key[hi * SP_WG + lid] = a;
                    }
                }
            }
        }
    }
    real_t chi2 = 0;
<%
    key = "l_key[({}) * SP_WG + lid]"
    X = "KEY_PHASE(%s)" % key
    Y = "l_y[KEY_INDEX(%s)]" % key
    W = "l_w[KEY_INDEX(%s)]" % key
    OUT = ("{{ const real_t res = %s - {v}; chi2 += %s * res * res; }}"
           % (Y.replace("{}", "{j}"), W.replace("{}", "{j}")))
%>
${single_pass(X, Y, W, "n", "alpha", OUT)}
    const real_t chi0 = obj_chi0[obj];
    power[(long) obj * row_len + col0 + j] = (real_t) 0.5 * n * (chi0 - chi2 / n) / chi0;
}

// {{{ Friedman's original SuperSmoother (spec §2.2-§2.3), one work-item per problem

// Element i of a problem's array lives at ptr[i * stride]: stride 1 for
// contiguous problems, the number of problems of a block for the coalesced
// [point][problem] layout of the search (neighbouring work-items then touch
// neighbouring addresses).
#define AT(ptr, i) (ptr)[(long) (i) * stride]

// Running-line smooth of v over sorted x with half-width h (spec §2.2):
// periodic (windows wrap, x shifted by -1/+1) or interval mode. Writes smo and,
// when acvr is not null, the absolute leave-one-out residuals.
void smooth_pass(__global const real_t *x, __global const real_t *v, __global const real_t *w,
                 const int n, const int stride, const int h, const int periodic,
                 const real_t vsml, __global real_t *smo, __global real_t *acvr)
{
    window_t win;
    win_seed(&win, 0, 0, 0);
    const int first = periodic ? -h - 1 : 0, last = periodic ? h : 2 * h + 1;
    for (int i = first; i < last; ++i) {
        const int u = i < 0 ? i + n : i;
        win_add(&win, AT(x, u) - (i < 0 ? (real_t) 1 : (real_t) 0), AT(v, u), AT(w, u));
    }
    for (int j = 0; j < n; ++j) {
        const int leaving = j - h - 1, entering = j + h;
        if (periodic || (leaving >= 0 && entering <= n - 1)) {
            const int uo = leaving < 0 ? leaving + n : leaving;
            win_remove(&win, AT(x, uo) - (leaving < 0 ? (real_t) 1 : (real_t) 0), AT(v, uo),
                       AT(w, uo));
            const int ui = entering >= n ? entering - n : entering;
            win_add(&win, AT(x, ui) + (entering >= n ? (real_t) 1 : (real_t) 0), AT(v, ui),
                    AT(w, ui));
        }
        const real_t xj = AT(x, j);
        const real_t fit = win_slope(&win, vsml) * (xj - win.xbar) + win.ybar;
        AT(smo, j) = fit;
        if (acvr) {
            const real_t d = 1 - AT(w, j) * win_hat(&win, xj, vsml);
            if (d > 0)
                AT(acvr, j) = fabs(AT(v, j) - fit) / d;
            else
                AT(acvr, j) = j > 0 ? AT(acvr, j - 1) : (real_t) 0;
        }
    }
}

// supsmu with automatic span of one problem (spec §2.3, GPU-port semantics: no
// tied-x post-pass, no scale widening). scratch holds 8 arrays of the same
// layout as x, the k-th starting at scratch + k * sep. Problems of fewer than
// 5 points get NaN (the woofer window would not fit, spec §9.9).
void supsmu_one(__global const real_t *px, __global const real_t *py,
                __global const real_t *pw, const int n, const int stride, const int iper,
                const real_t alpha, __global real_t *scratch, const long sep,
                __global real_t *out)
{
    if (n < 5) {
        for (int j = 0; j < n; ++j)
            AT(out, j) = NAN;
        return;
    }
    if (AT(px, n - 1) <= AT(px, 0)) {  // all abscissae equal: the weighted mean
        real_t sy = 0, sw = 0;
        for (int j = 0; j < n; ++j) {
            sy += AT(pw, j) * AT(py, j);
            sw += AT(pw, j);
        }
        for (int j = 0; j < n; ++j)
            AT(out, j) = sw > 0 ? sy / sw : (real_t) 0;
        return;
    }
    __global real_t *fit = scratch, *res = scratch + 3 * sep;    // F_k at fit + k sep
    __global real_t *a = scratch + 6 * sep, *b = scratch + 7 * sep;
    const real_t scale = AT(px, 3 * (n / 4) - 1) - AT(px, n / 4 - 1);
    const real_t vsml = ${lit(1e-6)} * scale * scale;
    const int periodic = iper == 2 && !(AT(px, 0) < 0 || AT(px, n - 1) > 1);
    const int h[3] = {max(2, (n + 20) / 40), max(2, (n + 5) / 10), max(2, (n + 2) / 4)};
    const real_t span[3] = {${lit(0.05)}, ${lit(0.2)}, ${lit(0.5)}};
    for (int k = 0; k < 3; ++k) {
        smooth_pass(px, py, pw, n, stride, h[k], periodic, vsml, fit + k * sep, a);
        smooth_pass(px, a, pw, n, stride, h[1], periodic, vsml, res + k * sep, 0);
    }
    for (int j = 0; j < n; ++j) {  // span per point, with bass enhancement
        real_t s = NAN, resmin = ${lit(1e20)};
        for (int k = 0; k < 3; ++k) {
            const real_t r = AT(res + k * sep, j);
            if (r < resmin) {
                resmin = r;
                s = span[k];
            }
        }
        const real_t r2 = AT(res + 2 * sep, j);
        if (alpha > 0 && alpha <= 10 && resmin < r2 && resmin > 0)
            s += (span[2] - s) * pow(fmax(${lit(1e-7)}, resmin / r2), 10 - alpha);
        AT(a, j) = s;
    }
    smooth_pass(px, a, pw, n, stride, h[1], periodic, vsml, b, 0);
    for (int j = 0; j < n; ++j) {  // interpolate the fits at the smoothed span
        real_t s = AT(b, j);
        if (s <= span[0])
            s = span[0];
        if (s >= span[2])
            s = span[2];
        real_t phi;
        if (s < span[1]) {
            phi = (span[1] - s) / (span[1] - span[0]);
            AT(a, j) = (1 - phi) * AT(fit + sep, j) + phi * AT(fit, j);
        } else {
            phi = (s - span[1]) / (span[2] - span[1]);
            AT(a, j) = (1 - phi) * AT(fit + sep, j) + phi * AT(fit + 2 * sep, j);
        }
    }
    smooth_pass(px, a, pw, n, stride, h[0], periodic, vsml, out, 0);
}

// Contiguous problems: problem p holds points offsets[p] .. offsets[p+1].
__kernel void supsmu_batch(
    __global const real_t *restrict x,
    __global const real_t *restrict y,
    __global const real_t *restrict w,
    __global const int *restrict offsets,
    const int n_problems, const int iper, const real_t alpha,
    __global real_t *restrict scratch,
    __global real_t *restrict smo)
{
    const int p = get_global_id(0);
    if (p >= n_problems)
        return;
    const int o = offsets[p], n = offsets[p + 1] - o;
    supsmu_one(x + o, y + o, w + o, n, 1, iper, alpha, scratch + 8 * (long) o, n, smo + o);
}

// Search layout: frequency j of object obj, point i at out_base[obj] + i*nf + j
// (coalesced: work-items j, j+1 read neighbouring addresses); scratch holds 8
// such arrays of `total` values each.
__kernel void supsmu_search(
    __global const real_t *restrict x, __global const real_t *restrict y,
    __global const real_t *restrict w,
    __global const int *restrict obj_n, __global const long *restrict out_base,
    const int nf, const long total, const int iper, const real_t alpha,
    __global real_t *restrict scratch, __global real_t *restrict smo)
{
    const int obj = get_global_id(0) / nf, j = get_global_id(0) % nf;
    const long at = out_base[obj] + j;
    supsmu_one(x + at, y + at, w + at, obj_n[obj], nf, iper, alpha, scratch + at, total,
               smo + at);
}

#undef AT

// }}}

// Single-pass periodogram over sorted points in the coalesced search layout
// (point i of object obj, frequency j at out_base[obj] + i * nf + j), one
// work-item per (object, frequency), chi^2 accumulated during the sweep.
__kernel void sp_search_global(
    __global const real_t *restrict xs, __global const real_t *restrict ys,
    __global const real_t *restrict ws,
    __global const int *restrict obj_n, __global const long *restrict out_base,
    __global const real_t *restrict obj_chi0, const int nf, const real_t alpha,
    const int row_len, const int col0, __global real_t *restrict power)
{
    const int obj = get_global_id(0) / nf, j = get_global_id(0) % nf;
    const int n = obj_n[obj];
    const long at = out_base[obj] + j;
    real_t chi2 = 0;
<%
    X = "xs[at + (long) ({}) * nf]"
    Y = "ys[at + (long) ({}) * nf]"
    W = "ws[at + (long) ({}) * nf]"
    OUT = ("{{ const real_t res = %s - {v}; chi2 += %s * res * res; }}"
           % (Y.replace("{}", "{j}"), W.replace("{}", "{j}")))
%>
${single_pass(X, Y, W, "n", "alpha", OUT)}
    const real_t chi0 = obj_chi0[obj];
    power[(long) obj * row_len + col0 + j] = (real_t) 0.5 * n * (chi0 - chi2 / n) / chi0;
}

// {{{ search helpers for the per-problem (global-memory) smoothers

// Segment (o, j) of a fold-sort launch (row layout base + j*n + i): gather
// phases, y and w in phase order into the coalesced layout base + i*nf + j.
__kernel void gather_sorted(
    __global const real_t *restrict phase, __global const int *restrict order,
    __global const real_t *restrict y, __global const real_t *restrict w,
    __global const int *restrict obj_start, __global const int *restrict obj_n,
    __global const long *restrict out_base, const int nf,
    __global real_t *restrict xs, __global real_t *restrict ys, __global real_t *restrict ws)
{
    const int obj = get_global_id(0) / nf, j = get_global_id(0) % nf;
    const int start = obj_start[obj], n = obj_n[obj];
    const long row = out_base[obj] + (long) j * n, col = out_base[obj] + j;
    for (int i = 0; i < n; ++i) {
        const int src = start + order[row + i];
        xs[col + (long) i * nf] = phase[row + i];
        ys[col + (long) i * nf] = y[src];
        ws[col + (long) i * nf] = w[src];
    }
}

// power = (n/2)(chi0 - chi2)/chi0 with chi2 = sum w (y - smo)^2 / n (spec §3.5).
__kernel void chi2_power(
    __global const real_t *restrict ys, __global const real_t *restrict ws,
    __global const real_t *restrict smo,
    __global const int *restrict obj_n, __global const long *restrict out_base,
    __global const real_t *restrict obj_chi0, const int nf, const int row_len, const int col0,
    __global real_t *restrict power)
{
    const int obj = get_global_id(0) / nf, j = get_global_id(0) % nf;
    const int n = obj_n[obj];
    const long col = out_base[obj] + j;
    real_t chi2 = 0;
    for (int i = 0; i < n; ++i) {
        const long at = col + (long) i * nf;
        const real_t r = ys[at] - smo[at];
        chi2 += ws[at] * r * r;
    }
    const real_t chi0 = obj_chi0[obj];
    power[(long) obj * row_len + col0 + j] = (real_t) 0.5 * n * (chi0 - chi2 / n) / chi0;
}

// }}}
