# report.awk: Markdown tables of a comparison run (used by bench/compare.sh).
#
#   awk -v mode=table|targets|summary -v providers="shm sockets ..." \
#       -f report.awk medians.tsv runs.tsv
#
# medians.tsv: contender provider op size metric median n   (tab-separated)
# runs.tsv:    contender provider group rep rc seconds status
# Provider-independent contenders (osc-ucx, ob1-vader, ob1-tcp) have
# provider "-". Written for POSIX awk (Debian's mawk).

BEGIN {
    FS = "\t"
    np = split(providers, prov, " ")
    nsz = split("8 65536 1048576 4194304", tsz, " ")
    bwsz = split("65536 1048576 4194304", bsz, " ")
}

FNR == 1 { file++ }
file == 1 && $1 != "contender" {
    M[$1 SUBSEP $2 SUBSEP $3 SUBSEP $4 SUBSEP $5] = $6
    N[$1 SUBSEP $2 SUBSEP $3 SUBSEP $4 SUBSEP $5] = $7
    have[$1 SUBSEP $2] = 1
}
file == 2 && $1 != "contender" {
    k = $1 SUBSEP $2 SUBSEP $3
    cnt[k SUBSEP $7]++
    if (!(k in seen)) { seen[k] = 1; order[k] = "" }
    if (index(" " order[k] " ", " " $7 " ") == 0) order[k] = order[k] " " $7
    runs[k]++
}

function independent(c) { return c == "osc-ucx" || c == "ob1-vader" || c == "ob1-tcp" }
function pkey(c, p) { return independent(c) ? "-" : p }

# the run group that measures op/metric for contender c
function group(c, op, metric) {
    if (c == "raw") return op == "send" ? "msg" : "rma"
    if (op == "send") return metric == "lat" ? "p2plat" : "stream"
    if (op == "cas") return "cas"
    return metric == "lat" ? "lat" : "bw"
}

# why there is no value: the most frequent status that is not "ok"
function why(c, p, op, metric,    k, n, i, w, s, best, bestn) {
    if (c == "raw" && p == "udp;ofi_rxd" && (op == "fop" || op == "cas"))
        return "skipped (#11814)"
    k = c SUBSEP pkey(c, p) SUBSEP group(c, op, metric)
    if (!(k in seen)) return "not run"
    n = split(order[k], w, " ")
    best = ""; bestn = 0
    for (i = 1; i <= n; i++) {
        s = w[i]
        if (s != "ok" && cnt[k SUBSEP s] > bestn) { best = s; bestn = cnt[k SUBSEP s] }
    }
    if (best == "") return "n/a"
    return best
}

function val(c, p, op, size, metric,    k) {
    k = c SUBSEP pkey(c, p) SUBSEP op SUBSEP size SUBSEP metric
    return (k in M) ? M[k] : ""
}

function fmt(v) {
    if (v == "") return ""
    v += 0
    if (v >= 100) return sprintf("%.0f", v)
    if (v >= 10) return sprintf("%.1f", v)
    if (v >= 1) return sprintf("%.2f", v)
    return sprintf("%.3g", v)
}

function cell(c, p, op, size, metric,    v) {
    v = val(c, p, op, size, metric)
    return v == "" ? why(c, p, op, metric) : fmt(v)
}

function ratio(a, b) {
    if (a == "" || b == "" || b + 0 == 0) return "-"
    return sprintf("%.2f", (a + 0) / (b + 0))
}

function hsize(s) {
    s += 0
    if (s >= 1048576 && s % 1048576 == 0) return (s / 1048576) " MiB"
    if (s >= 1024 && s % 1024 == 0) return (s / 1024) " KiB"
    return s " B"
}

function unit(m) { return m == "lat" ? "lat us" : (m == "bw" ? "bw MB/s" : "rate Mmsg/s") }

function row1(p, op, size, metric,    o, r, u, w) {
    o = val("ours", p, op, size, metric); r = val("reference", p, op, size, metric)
    u = val("osc-ucx", p, op, size, metric); w = val("raw", p, op, size, metric)
    if (o == "" && r == "" && u == "" && w == "") return # size not measured (QUICK)
    printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", op, hsize(size), unit(metric),
        cell("ours", p, op, size, metric), cell("reference", p, op, size, metric),
        cell("osc-ucx", p, op, size, metric), cell("raw", p, op, size, metric),
        ratio(o, r), ratio(o, u), ratio(o, w)
}

function row2(p, op, size, metric,    o, v, t, w) {
    o = val("ours", p, op, size, metric); v = val("ob1-vader", p, op, size, metric)
    t = val("ob1-tcp", p, op, size, metric); w = val("raw", p, op, size, metric)
    if (o == "" && v == "" && t == "" && w == "") return # size not measured (QUICK)
    printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", op, hsize(size), unit(metric),
        cell("ours", p, op, size, metric), cell("ob1-vader", p, op, size, metric),
        cell("ob1-tcp", p, op, size, metric), cell("raw", p, op, size, metric),
        ratio(o, v), ratio(o, t), ratio(o, w)
}

function table(    i, p, j, op, ops, no) {
    print "Medians over the repetitions (each value itself the median of the timed runs"
    print "inside one program run). lat in microseconds (lower is better), bw in MB/s"
    print "(1e6 bytes/s) and rate in millions of messages per second (higher is better)."
    print "Ratios are ours divided by the other: below 1 is better for lat, above 1 for"
    print "bw and rate. A word instead of a number says how that contender's runs ended"
    print "(refused, crashed, hung, skipped, not run)."
    print ""
    for (i = 1; i <= np; i++) {
        p = prov[i]
        print "### " p
        print ""
        print "One-sided (MPI_Win_create window, lock_all, flush after each op or window):"
        print ""
        print "| op | size | metric | ours | reference | osc/ucx | raw | ours/ref | ours/ucx | ours/raw |"
        print "|---|---|---|---|---|---|---|---|---|---|"
        for (j = 1; j <= nsz; j++) row1(p, "put", tsz[j], "lat")
        for (j = 1; j <= nsz; j++) row1(p, "get", tsz[j], "lat")
        row1(p, "acc", 8, "lat"); row1(p, "fop", 8, "lat"); row1(p, "cas", 8, "lat")
        for (j = 1; j <= nsz; j++) row1(p, "put", tsz[j], "bw")
        for (j = 1; j <= nsz; j++) row1(p, "get", tsz[j], "bw")
        row1(p, "put", 8, "rate"); row1(p, "get", 8, "rate")
        print ""
        print "Two-sided (ping-pong latency, streaming bandwidth and rate):"
        print ""
        print "| op | size | metric | ours | ob1+vader | ob1+tcp | raw | ours/vader | ours/tcp | ours/raw |"
        print "|---|---|---|---|---|---|---|---|---|---|"
        for (j = 1; j <= nsz; j++) row2(p, "send", tsz[j], "lat")
        for (j = 1; j <= nsz; j++) row2(p, "send", tsz[j], "bw")
        row2(p, "send", 8, "rate")
        print ""
    }
}

# ------------------------------------------------------------ targets
# speedup of ours over c: >1 means ours is better
function speedup(p, c, op, size, metric,    o, x) {
    o = val("ours", p, op, size, metric); x = val(c, p, op, size, metric)
    if (o == "" || x == "" || o + 0 == 0 || x + 0 == 0) return ""
    return metric == "lat" ? (x + 0) / (o + 0) : (o + 0) / (x + 0)
}

# one check: records it and keeps the worst per (target, provider)
function check(t, p, what, r, ok, shown) {
    nchk++
    C[nchk] = sprintf("| %s | %s | %s | %s | %s |", t, p, what, shown, ok ? "met" : "MISSED")
    tp = t SUBSEP p
    checked[tp]++
    if (!ok) { missed[tp]++; if (!(tp in worst)) worst[tp] = what " " shown }
}

function onesided_list(    n) {
    # op size metric triples of the one-sided table
    n = 0
    n = addl(n, "put 8 lat;put 65536 lat;put 1048576 lat;put 4194304 lat;get 8 lat;get 65536 lat;get 1048576 lat;get 4194304 lat;acc 8 lat;fop 8 lat;cas 8 lat;put 65536 bw;put 1048576 bw;put 4194304 bw;get 65536 bw;get 1048576 bw;get 4194304 bw;put 8 rate;get 8 rate")
    return n
}
function addl(n, s,    a, m, i) {
    m = split(s, a, ";")
    for (i = 1; i <= m; i++) L[n + i] = a[i]
    return n + m
}

function targets(    i, p, n, j, f, s, r, what, hasref, hasucx, t, tp, k) {
    n = onesided_list()
    for (i = 1; i <= np; i++) {
        p = prov[i]
        for (j = 1; j <= n; j++) {
            split(L[j], f, " ")
            what = f[1] " " hsize(f[2]) " " f[3]
            # T1: >= 5x faster than the reference (where both run)
            s = speedup(p, "reference", f[1], f[2], f[3])
            if (s != "") check("T1 >=5x reference", p, what, s, s >= 5, sprintf("%.2fx", s))
            # T2: never slower than osc/ucx
            s = speedup(p, "osc-ucx", f[1], f[2], f[3])
            if (s != "") check("T2 >=1x osc/ucx", p, what, s, s >= 1, sprintf("%.2fx", s))
            # T3: latency within 1.3x of the raw floor, 1 MiB bandwidth within 0.9x
            if (f[3] == "lat") {
                r = val("ours", p, f[1], f[2], "lat"); k = val("raw", p, f[1], f[2], "lat")
                if (r != "" && k != "") check("T3a lat <=1.3x raw", p, what, r / k, r / k <= 1.3, sprintf("%.2f", r / k))
            }
            if (f[3] == "bw" && f[2] == 1048576) {
                r = val("ours", p, f[1], f[2], "bw"); k = val("raw", p, f[1], f[2], "bw")
                if (r != "" && k != "") check("T3b 1MiB bw >=0.9x raw", p, what, r / k, r / k >= 0.9, sprintf("%.2f", r / k))
            }
        }
        # two-sided against the floor too
        for (j = 1; j <= nsz; j++) {
            r = val("ours", p, "send", tsz[j], "lat"); k = val("raw", p, "send", tsz[j], "lat")
            if (r != "" && k != "") check("T3a lat <=1.3x raw", p, "send " hsize(tsz[j]) " lat", r / k, r / k <= 1.3, sprintf("%.2f", r / k))
        }
        r = val("ours", p, "send", 1048576, "bw"); k = val("raw", p, "send", 1048576, "bw")
        if (r != "" && k != "") check("T3b 1MiB bw >=0.9x raw", p, "send 1 MiB bw", r / k, r / k >= 0.9, sprintf("%.2f", r / k))
        # T4: two-sided over shm within 1.5x of ob1+vader latency
        if (p == "shm") {
            for (j = 1; j <= nsz; j++) {
                r = val("ours", p, "send", tsz[j], "lat"); k = val("ob1-vader", p, "send", tsz[j], "lat")
                if (r != "" && k != "") check("T4 shm lat <=1.5x vader", p, "send " hsize(tsz[j]) " lat", r / k, r / k <= 1.5, sprintf("%.2f", r / k))
            }
        }
        # T5: over tcp;ofi_rxm ahead of ob1+tcp
        if (p == "tcp;ofi_rxm") {
            for (j = 1; j <= nsz; j++) {
                s = speedup(p, "ob1-tcp", "send", tsz[j], "lat")
                if (s != "") check("T5 tcp ahead of ob1+tcp", p, "send " hsize(tsz[j]) " lat", s, s > 1, sprintf("%.2fx", s))
                s = speedup(p, "ob1-tcp", "send", tsz[j], "bw")
                if (s != "") check("T5 tcp ahead of ob1+tcp", p, "send " hsize(tsz[j]) " bw", s, s > 1, sprintf("%.2fx", s))
            }
        }
    }
    print "Speedups (\"x\") are ours over the other, above 1 = ours better; plain"
    print "ratios are ours/raw (lat: at most 1.3; bw: at least 0.9) or ours/vader."
    print "A target with no check on a provider could not be compared there (the"
    print "other contender refused, crashed or hung; see table.md)."
    print ""
    print "| target | provider | checks | verdict | first miss |"
    print "|---|---|---|---|---|"
    split("T1 >=5x reference;T2 >=1x osc/ucx;T3a lat <=1.3x raw;T3b 1MiB bw >=0.9x raw;T4 shm lat <=1.5x vader;T5 tcp ahead of ob1+tcp", T, ";")
    for (t = 1; t <= 6; t++) {
        for (i = 1; i <= np; i++) {
            tp = T[t] SUBSEP prov[i]
            if (T[t] ~ /^T4/ && prov[i] != "shm") continue
            if (T[t] ~ /^T5/ && prov[i] != "tcp;ofi_rxm") continue
            if (!(tp in checked)) {
                printf "| %s | %s | 0 | not comparable | |\n", T[t], prov[i]
            } else if (tp in missed) {
                printf "| %s | %s | %d | MISSED (%d of %d) | %s |\n", T[t], prov[i], checked[tp], missed[tp], checked[tp], worst[tp]
            } else {
                printf "| %s | %s | %d | met | |\n", T[t], prov[i], checked[tp]
            }
        }
    }
    print ""
    print "Every check:"
    print ""
    print "| target | provider | what | ratio | verdict |"
    print "|---|---|---|---|---|"
    for (i = 1; i <= nchk; i++) print C[i]
}

# ------------------------------------------------------------ summary
# One compact table for the README: the key points per provider.
function srow(p, op, size, metric, versus,    o, a, b, c) {
    o = val("ours", p, op, size, metric)
    if (versus == "twosided") {
        a = val("ob1-vader", p, op, size, metric); b = val("ob1-tcp", p, op, size, metric)
    } else {
        a = val("reference", p, op, size, metric); b = val("osc-ucx", p, op, size, metric)
    }
    c = val("raw", p, op, size, metric)
    if (o == "" && a == "" && b == "" && c == "") return
    printf "| %s | %s %s %s | %s | %s | %s | %s |\n", p, op, hsize(size), unit(metric),
        cell("ours", p, op, size, metric),
        a == "" ? cell(versus == "twosided" ? "ob1-vader" : "reference", p, op, size, metric) : sx(o, a, metric),
        b == "" ? cell(versus == "twosided" ? "ob1-tcp" : "osc-ucx", p, op, size, metric) : sx(o, b, metric),
        c == "" ? cell("raw", p, op, size, metric) : sx(o, c, metric)
}

# speedup of ours over x ("2.00x": ours twice as fast), "-" without ours
function sx(o, x, metric) {
    if (o == "" || x == "" || o + 0 == 0 || x + 0 == 0) return "-"
    return sprintf("%.2fx", metric == "lat" ? (x + 0) / (o + 0) : (o + 0) / (x + 0))
}

function summary(    i, p) {
    print "Speedup of ours over each contender (above 1x: ours is faster; lat in us,"
    print "bw in MB/s, rate in Mmsg/s; a word says how that contender's runs ended)."
    print ""
    print "| provider | what | ours | vs reference | vs osc/ucx | vs raw |"
    print "|---|---|---|---|---|---|"
    for (i = 1; i <= np; i++) {
        p = prov[i]
        srow(p, "put", 8, "lat"); srow(p, "get", 8, "lat")
        srow(p, "acc", 8, "lat"); srow(p, "fop", 8, "lat"); srow(p, "cas", 8, "lat")
        srow(p, "put", 1048576, "bw"); srow(p, "get", 1048576, "bw")
        srow(p, "put", 8, "rate")
    }
    print ""
    print "| provider | what | ours | vs ob1+vader | vs ob1+tcp | vs raw |"
    print "|---|---|---|---|---|---|"
    for (i = 1; i <= np; i++) {
        p = prov[i]
        srow(p, "send", 8, "lat", "twosided"); srow(p, "send", 65536, "lat", "twosided")
        srow(p, "send", 1048576, "bw", "twosided"); srow(p, "send", 8, "rate", "twosided")
    }
}

END {
    if (mode == "table") table()
    else if (mode == "targets") targets()
    else if (mode == "summary") summary()
}
