"""Pure-Python reference twin of ``_proposal.pyx`` (used by the tests only)."""
import math


class ProposalKernel:
    """Same constructor and ``sample`` as the compiled ``_aobfs.ProposalKernel``."""

    def __init__(self, cards, pre, pos, size, comp_ptr, comp_lw, comp_kstride, comp_vptr,
                 comp_vars, comp_strides, tables, bucket_ptr, bucket_fac, f_off, f_vptr,
                 f_vars, f_strides, f_flat, row):
        self.__dict__.update(cards=cards, pre=pre, pos=pos, size=size, comp_ptr=comp_ptr,
                             comp_lw=comp_lw, comp_kstride=comp_kstride, comp_vptr=comp_vptr,
                             comp_vars=comp_vars, comp_strides=comp_strides, tables=list(tables),
                             bucket_ptr=bucket_ptr, bucket_fac=bucket_fac, f_off=f_off,
                             f_vptr=f_vptr, f_vars=f_vars, f_strides=f_strides, f_flat=f_flat)

    def sample(self, starts, x, uniforms):
        """Draw the subtrees of ``starts`` into ``x``; return (ln q, ln g)."""
        log_q = log_g = 0.0
        used = 0
        for v in starts:
            v = int(v)
            for i in range(self.pos[v], self.pos[v] + self.size[v]):
                k = int(self.pre[i])
                card = int(self.cards[k])
                if card > 1:
                    row = []
                    for xv in range(card):
                        vals = []
                        for c in range(self.comp_ptr[k], self.comp_ptr[k + 1]):
                            base = sum(int(x[self.comp_vars[j]]) * int(self.comp_strides[j])
                                       for j in range(self.comp_vptr[c], self.comp_vptr[c + 1]))
                            vals.append(self.comp_lw[c] + self.tables[c][base + self.comp_kstride[c] * xv])
                        m = max(vals)
                        row.append(m if m == -math.inf else m + math.log(sum(math.exp(a - m) for a in vals)))
                    m = max(row)
                    if m == -math.inf:
                        row = [0.0] * card
                        m = 0.0
                    tot = sum(math.exp(r - m) for r in row)
                    u = uniforms[used] * tot
                    used += 1
                    acc, idx = 0.0, card - 1
                    for xv in range(card):
                        acc += math.exp(row[xv] - m)
                        if u < acc:
                            idx = xv
                            break
                    while idx > 0 and row[idx] == -math.inf:
                        idx -= 1
                    x[k] = idx
                    log_q += row[idx] - m - math.log(tot)
                else:
                    x[k] = 0
                for j in range(self.bucket_ptr[k], self.bucket_ptr[k + 1]):
                    f = int(self.bucket_fac[j])
                    base = int(self.f_off[f]) + sum(int(x[self.f_vars[c]]) * int(self.f_strides[c])
                                                    for c in range(self.f_vptr[f], self.f_vptr[f + 1]))
                    log_g += float(self.f_flat[base])
        return log_q, log_g


    def sample_batch(self, starts, uniforms, x, log_const, out):
        """``len(out)`` draws from the all-zero assignment; out[i] = log_const + ln g - ln q."""
        for i in range(len(out)):
            x[:] = 0
            log_q, log_g = self.sample(starts, x, uniforms[i])
            out[i] = log_const + log_g - log_q
