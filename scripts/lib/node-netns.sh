# Shared by scripts/node-lane and scripts/bench-netpol (sourced, not run): a network namespace
# whose adapter holds the node's address, since the API server's serving certificate names the
# address it advertises, never loopback.
#
#   node_netns_up NS IP MAC   creates NS with loopback up and an adapter `node0` holding
#                             IP/24 and MAC, a default route through .1 of its /24; removes
#                             it, and kills what still runs in it, when the script exits
#   in_ns NS COMMAND...       runs COMMAND in NS

in_ns() { local ns=$1; shift; ip netns exec "$ns" "$@"; }

node_netns_up() {
  local ns=$1 ip=$2 mac=$3
  ip netns add "$ns"
  # shellcheck disable=SC2064 # the namespace's name is fixed now
  trap "ip netns pids '$ns' 2>/dev/null | xargs -r kill -9 2>/dev/null || true; ip netns delete '$ns' 2>/dev/null || true" EXIT
  in_ns "$ns" ip link set lo up
  in_ns "$ns" ip link add node0 type veth peer name node0-peer
  in_ns "$ns" ip link set node0 address "$mac"
  in_ns "$ns" ip addr add "$ip/24" dev node0
  in_ns "$ns" ip link set node0 up
  in_ns "$ns" ip link set node0-peer up
  in_ns "$ns" ip route add default via "${ip%.*}.1" dev node0
}
