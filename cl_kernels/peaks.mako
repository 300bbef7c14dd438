//CL//
## Top-k distinct peaks of periodogram rows held in device memory.
##
## Render parameters (strict_undefined):
##   real    "float" | "double"
##   wg      work-group size (power of two)
##   top_k   peaks kept per row
##   split   (optional, default False) rows are chunks of longer periodograms:
##           see below
<%namespace name="common" file="common.mako"/>
${common.prelude(real)}
#define WG ${wg}
#define TOP_K ${top_k}
<% split = context.get("split", False) %>
${common.argmax_pairs(wg)}

// Row r of power (row_len values) holds grid bins first_bin ..
// first_bin + row_len - 1; its owned bins are columns own0 .. own0 + n_own - 1,
// and the row includes their grid neighbours. A peak is strictly above its
// left neighbour and not below its right one (neighbours outside the grid or
// NaN count as -inf, so a plateau reports its first bin and the global maximum
// is always a peak). One work-group per row writes the TOP_K highest peaks,
// best first, equal values in grid order; index INT_MAX marks "no peak".
% if split:
// split: every periodogram (nf_all bins, one after the other) is cut into
// chunks of row_len bins, `chunks` per periodogram; row r is chunk r % chunks
// of periodogram r / chunks, whose neighbours are the adjacent bins (first_bin,
// own0 and n_own are unused). The host merges the chunks' peaks.
% endif
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void peaks_topk(
    __global const real_t *restrict power, const int row_len, int first_bin,
    int own0, int n_own, const int nf_all,
% if split:
    const int chunks,
% endif
    __global real_t *restrict best_val,    // (rows, TOP_K)
    __global int *restrict best_idx)
{
    const int lid = get_local_id(0);
    const int row = get_group_id(0);
% if split:
    first_bin = (row % chunks) * row_len;
    own0 = 0;
    n_own = min(row_len, nf_all - first_bin);
    __global const real_t *p = power + (long) (row / chunks) * nf_all + first_bin;
% else:
    __global const real_t *p = power + (long) row * row_len;
% endif
    __local real_t l_val[WG];
    __local int l_idx[WG];
    int taken[TOP_K];
    for (int r = 0; r < TOP_K; ++r) {
        real_t best = REAL_NEG_INF;
        int best_k = INT_MAX;
        for (int c = own0 + lid; c < own0 + n_own; c += WG) {
            const real_t v = p[c];
            const int k = first_bin + c;
            if (!(v > best))  // NaN never wins; ties keep the earlier bin
                continue;
            if ((k > 0 && p[c - 1] >= v) || (k < nf_all - 1 && p[c + 1] > v))
                continue;
            int skip = 0;
            for (int q = 0; q < r; ++q)
                skip |= (taken[q] == k);
            if (skip)
                continue;
            best = v;
            best_k = k;
        }
        l_val[lid] = best;
        l_idx[lid] = best_k;
        wg_argmax(l_val, l_idx, lid);
        taken[r] = l_idx[0];
        if (lid == 0) {
            best_val[(long) row * TOP_K + r] = l_val[0];
            best_idx[(long) row * TOP_K + r] = l_idx[0];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}
