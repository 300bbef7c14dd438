//CL//
## Phase folding and stable per-(object, frequency) sorting.
##
## Render parameters (strict_undefined):
##   real    "float" | "double": type of the phases
##   wg      work-group size of the local-memory sort
##   nmax    capacity of the local-memory sort (power of two, <= 4096); light
##           curves with more points use the radix path of clperiod.periodograms.folding
##   compat  fold as the reference code does (fmod(t, P) / P, see common.mako)
##   arbitrary  fold at frequencies read from an array (common.fold_phase)
##
## Phases are in cycles, in [0, 1), of t - t0 with t0 the object's earliest
## time. Keys pack the phase with the point's index (common.phase_keys), so
## every sort here equals a stable sort by phase.
<%namespace name="common" file="common.mako"/>
${common.prelude(real)}
#define WG ${wg}
#define NMAX ${nmax}

${common.fold_phase(real, compat, arbitrary)}
${common.phase_keys(real, (nmax - 1).bit_length() or 1)}

## Fold object obj's n points at grid index k into packed keys in l_key and
## sort them (bitonic, all work-items of the group; n_pad = next power of 2).
<%def name="fold_and_sort_keys()">
    int n_pad = 1;
    while (n_pad < n)
        n_pad <<= 1;
    for (int i = lid; i < n_pad; i += WG)
        l_key[i] = i < n ? PHASE_KEY(FOLD(start + i, k), i) : ULONG_MAX;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int size = 2; size <= n_pad; size <<= 1) {
        for (int stride = size >> 1; stride > 0; stride >>= 1) {
            for (int i = lid; i < n_pad / 2; i += WG) {
                const int lo = 2 * i - (i & (stride - 1));
                const int hi = lo + stride;
                const ulong a = l_key[lo], b = l_key[hi];
                if ((a > b) == ((lo & size) == 0)) {
                    l_key[lo] = b;
                    l_key[hi] = a;
                }
            }
            barrier(CLK_LOCAL_MEM_FENCE);
        }
    }
</%def>

// One work-group per (object, frequency): fold into packed keys, bitonic-sort
// them in local memory, write the sorted phases (recomputed from the index,
// so exact) and the permutation (indices within the object).
// Output of object o, frequency j of this launch: base[o] + j * n_o + i.
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void fold_sort_local(
    FOLD_ARGS,
    __global const int *restrict obj_start,
    __global const int *restrict obj_n,
    __global const long *restrict out_base,
    const int k0, const int nf,
    __global real_t *restrict phase_out,
    __global int *restrict order_out)
{
    __local ulong l_key[NMAX];
    const int obj = get_group_id(0) / nf;
    const int j = get_group_id(0) % nf, k = k0 + j;
    const int lid = get_local_id(0);
    const int start = obj_start[obj], n = obj_n[obj];
${fold_and_sort_keys()}
    const long base = out_base[obj] + (long) j * n;
    for (int i = lid; i < n; i += WG) {
        const int index = KEY_INDEX(l_key[i]);
        phase_out[base + i] = FOLD(start + index, k);
        order_out[base + i] = index;
    }
}

// The same, writing the phases and the values and weights in phase order
// straight into the coalesced search layout: point i of (obj, j) at
// out_base[obj] + i * nf + j (out_base[obj] = nf * first row of obj).
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void fold_sort_gather(
    FOLD_ARGS,
    __global const real_t *restrict pt_y,
    __global const real_t *restrict pt_w,
    __global const int *restrict obj_start,
    __global const int *restrict obj_n,
    __global const long *restrict out_base,
    const int k0, const int nf,
    __global real_t *restrict xs, __global real_t *restrict ys, __global real_t *restrict ws)
{
    __local ulong l_key[NMAX];
    const int obj = get_group_id(0) / nf;
    const int j = get_group_id(0) % nf, k = k0 + j;
    const int lid = get_local_id(0);
    const int start = obj_start[obj], n = obj_n[obj];
${fold_and_sort_keys()}
    const long col = out_base[obj] + j;
    for (int i = lid; i < n; i += WG) {
        const int src = start + KEY_INDEX(l_key[i]);
        const long at = col + (long) i * nf;
        xs[at] = FOLD(src, k);
        ys[at] = pt_y[src];
        ws[at] = pt_w[src];
    }
}

// Fold only (for the radix path): one work-item per (segment, point), same
// output layout; seg numbers the (object, frequency) segments obj * nf + j.
// Work-item gid covers segment gid / n_stride, point gid % n_stride.
__kernel void fold(
    FOLD_ARGS,
    __global const int *restrict obj_start,
    __global const int *restrict obj_n,
    __global const long *restrict out_base,
    const int k0, const int nf, const int n_obj, const int n_stride,
    __global real_t *restrict phase_out,
    __global int *restrict index_out,
    __global int *restrict seg_out)
{
    const long gid = get_global_id(0);
    const int seg = (int) (gid / n_stride), i = (int) (gid % n_stride);
    const int obj = seg / nf, j = seg % nf;
    if (obj >= n_obj || i >= obj_n[obj])
        return;
    const long at = out_base[obj] + (long) j * obj_n[obj] + i;
    phase_out[at] = FOLD(obj_start[obj] + i, k0 + j);
    index_out[at] = i;
    seg_out[at] = seg;
}
