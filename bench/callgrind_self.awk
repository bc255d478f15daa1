# callgrind_self.awk: instructions (Ir) executed in one shared object's own
# code, from a callgrind output file (callgrind_annotate attributes a
# function's cost to its object only on some of its lines, which lost up to
# a third of ours):
#
#   awk -v obj=mca_btl_ofi.so -f bench/callgrind_self.awk callgrind.out
#
# Prints the sum of the self cost of every cost line whose current object
# (ob=) contains OBJ. A line after calls= is the inclusive cost of that
# call, which belongs to the callee: it is skipped. Names are compressed in
# the format ("ob=(3) /path" once, "ob=(3)" after), so ids are remembered.
# (an id may first be named on a cob= line, the object of a callee)
/^c?ob=/ {
    id = $1
    sub(/^c?ob=/, "", id)
    if (NF > 1) {
        name = $0
        sub(/^c?ob=\([0-9]+\) /, "", name)
        names[id] = name
    }
    if ($0 ~ /^ob=/) {
        ours = index(names[id], obj) > 0
    }
    next
}
/^calls=/ { skip = 1; next }
/^[0-9+*-]/ {
    if (skip) { skip = 0; next }
    if (ours) total += $NF
    next
}
END { printf "%.0f\n", total }
