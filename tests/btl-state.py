# gdb python: btl/ofi's state in a hung process, in a few lines, for the
# watchdog (tests/lib.sh dump_stacks: gdb -p PID -batch -x this file).
# What a hang leaves behind: operations and messages still counted in
# flight per context, what waits in its queues, and per peer the emulated
# RMA window, messages of a budget in flight and unacknowledged sends.
# Reads the component's globals only (the library has its symbols); a
# field this build lacks prints "?" instead of stopping the script.
import gdb


def val(v, *path):
    try:
        for p in path:
            v = v[p]
        return int(v)
    except (gdb.error, RuntimeError, TypeError, ValueError):
        return "?"


def llen(v, *path):
    return val(v, *(path + ("opal_list_length",)))


def main():
    try:
        comp = gdb.parse_and_eval("mca_btl_ofi_component")
        nmod = int(comp["num_modules"])
    except gdb.error:
        print("btl/ofi state: mca_btl_ofi_component not loaded here")
        return
    for m in range(nmod):
        mod = comp["modules"][m]
        line = "btl/ofi module %d:" % m
        line += " emu_failed %s" % llen(mod, "emu_failed")
        line += " emu_requests %s" % val(mod, "emu_requests", "ht_size")
        for c in range(int(mod["num_contexts"])):
            ctx = mod["contexts"][c]
            cnt = ctx["counters"]
            line += " | ctx %d out %s sends_out %s emu %s sendq %s pending %s rdmaq %s" \
                    " sent %s/%s recv %s gets %s puts %s" % (
                        c, val(ctx, "outstanding"), val(ctx, "sends_outstanding"),
                        val(ctx, "emulated"), llen(ctx, "sendq"), llen(ctx, "pending"),
                        llen(ctx, "rdmaq"), val(cnt, "send_count"), val(cnt, "send_bytes"),
                        val(cnt, "recv_count"), val(cnt, "get_count"), val(cnt, "put_count"))
        print(line)
        eps = mod["endpoints"]
        sentinel = eps["opal_list_sentinel"].address
        it = eps["opal_list_sentinel"]["opal_list_next"]
        eptype = gdb.lookup_type("mca_btl_ofi_endpoint_t").pointer()
        peers = []
        while it != sentinel and len(peers) < 16:
            ep = it.cast(eptype)
            peers.append("rank %s: posted %s completed %s dead %s credits %s waiting %s"
                         " getv %s putv %s stream %s quick %s" % (
                val(ep, "proc", "proc_name", "vpid"), val(ep, "posted"), val(ep, "completed"),
                val(ep, "dead"), val(ep, "emu", "credits"), llen(ep, "emu", "waiting"), val(ep, "getv_open"),
                val(ep, "putv_open"), val(ep, "stream_bytes"), val(ep, "quick_sent")))
            it = it["opal_list_next"]
        for p in peers:
            print("  peer " + p)


main()
