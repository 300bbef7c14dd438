//CL//
## Phase folding and stable per-(object, frequency) sorting.
##
## Render parameters (strict_undefined):
##   real    "float" | "double": type of the phases (the sort keys)
##   wg      work-group size
##   nmax    capacity of the local-memory sort (power of two); light curves with
##           more points use the radix path of clperiod.sort
##
## Phases are in cycles, in [0, 1): phase = frac((t - t0) * f) with t0 the
## object's earliest time. fp64 computes it with an exact FMA residual; fp32
## gets it in double-single form (a + k*(bh + bl), see lombscargle.mako), so
## raw MJD/BJD inputs keep ~1e-7-cycle phases. Ties in phase are broken by
## the original index, so every sort here equals a stable sort.
<%namespace name="common" file="common.mako"/>
${common.prelude(real)}
<% fp64 = real == "double" %>
#define WG ${wg}
#define NMAX ${nmax}

${common.fold_phase(real)}

// (phase, index) lexicographic order: a stable ascending sort by phase.
inline int before(const real_t pa, const int ia, const real_t pb, const int ib)
{
    return pa < pb || (pa == pb && ia < ib);
}

## Ascending bitonic sort of n_pad (a power of two, <= NMAX) keys with their
## indices, held in local memory; all work-items of the group must call it.
<%def name="bitonic_sort_local(keys, idx, n_pad)">
    for (int size = 2; size <= ${n_pad}; size <<= 1) {
        for (int stride = size >> 1; stride > 0; stride >>= 1) {
            for (int i = get_local_id(0); i < ${n_pad} / 2; i += WG) {
                const int lo = 2 * i - (i & (stride - 1));
                const int hi = lo + stride;
                const real_t kl = ${keys}[lo], kh = ${keys}[hi];
                const int il = ${idx}[lo], ih = ${idx}[hi];
                const int up = (lo & size) == 0;
                if (up ? before(kh, ih, kl, il) : before(kl, il, kh, ih)) {
                    ${keys}[lo] = kh; ${keys}[hi] = kl;
                    ${idx}[lo] = ih; ${idx}[hi] = il;
                }
            }
            barrier(CLK_LOCAL_MEM_FENCE);
        }
    }
</%def>

// One work-group per (object, frequency): fold, sort in local memory, write
// the sorted phases and the permutation (indices within the object).
// Output of object o, frequency j of this launch: base[o] + j * n_o + i.
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void fold_sort_local(
% if fp64:
    __global const double *restrict pt_t, const double fmin, const double df,
% else:
    __global const float *restrict pt_a, __global const float *restrict pt_bh,
    __global const float *restrict pt_bl,
% endif
    __global const int *restrict obj_start,
    __global const int *restrict obj_n,
    __global const long *restrict out_base,
    const int k0, const int nf,
    __global real_t *restrict phase_out,
    __global int *restrict order_out)
{
    __local real_t l_key[NMAX];
    __local int l_idx[NMAX];
    const int obj = get_group_id(0) / nf;
    const int j = get_group_id(0) % nf;
    const int start = obj_start[obj], n = obj_n[obj];
    int n_pad = 1;
    while (n_pad < n)
        n_pad <<= 1;
    for (int i = get_local_id(0); i < n_pad; i += WG) {
        if (i < n) {
% if fp64:
            l_key[i] = fold_phase(pt_t, start + i, fmin, df, k0 + j);
% else:
            l_key[i] = fold_phase(pt_a, pt_bh, pt_bl, start + i, k0 + j);
% endif
            l_idx[i] = i;
        } else {
            l_key[i] = INFINITY;
            l_idx[i] = INT_MAX;
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
${bitonic_sort_local("l_key", "l_idx", "n_pad")}
    const long base = out_base[obj] + (long) j * n;
    for (int i = get_local_id(0); i < n; i += WG) {
        phase_out[base + i] = l_key[i];
        order_out[base + i] = l_idx[i];
    }
}

// Fold only (for the radix path): one work-item per (object, frequency,
// point), same output layout; seg numbers the (object, frequency) segments.
__kernel void fold(
% if fp64:
    __global const double *restrict pt_t, const double fmin, const double df,
% else:
    __global const float *restrict pt_a, __global const float *restrict pt_bh,
    __global const float *restrict pt_bl,
% endif
    __global const int *restrict obj_start,
    __global const int *restrict obj_n,
    __global const long *restrict out_base,
    const int k0, const int nf, const int n_obj,
    __global real_t *restrict phase_out,
    __global int *restrict index_out,
    __global int *restrict seg_out)
{
    const int obj = get_global_id(1);
    const int j = get_global_id(2);
    const int i = get_global_id(0);
    if (obj >= n_obj || j >= nf || i >= obj_n[obj])
        return;
    const int n = obj_n[obj];
    const long at = out_base[obj] + (long) j * n + i;
% if fp64:
    phase_out[at] = fold_phase(pt_t, obj_start[obj] + i, fmin, df, k0 + j);
% else:
    phase_out[at] = fold_phase(pt_a, pt_bh, pt_bl, obj_start[obj] + i, k0 + j);
% endif
    index_out[at] = i;
    seg_out[at] = obj * nf + j;
}
