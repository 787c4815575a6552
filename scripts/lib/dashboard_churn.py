"""Pod churn on two emulated nodes, each with a node daemon serving its metrics: what
scripts/render-dashboard has Prometheus scrape to draw the dashboard of docs/monitoring.md.

Usage: dashboard_churn.py BIN_DIR WORK_DIR SECONDS ADDRESS1,ADDRESS2

BIN_DIR holds the Linux builds of cni-win, win-bridge, host-local and hnsctl. Each node is an
HCN emulator state under WORK_DIR with Flannel host-gw's network `cbr0` (L2Bridge
10.244.1.0/24, made with hnsctl), a config directory with win-bridge's config for it and a
plugin directory with win-bridge and host-local, and runs `cni-win daemon --every 2s --apply`
with its metrics on its ADDRESS. For SECONDS the pools fill and drain: pods start and stop
through win-bridge's ADD and DEL as a runtime runs them, some are killed without a DEL (their
namespace deleted), and some ADDs die after their reservation (host-local's ADD alone); past
the middle, the first node's HNS stops answering a while (injected timeouts), then restarts
and loses every endpoint (kubelet's re-created sandboxes are new pods of the churn).

The daemons are stopped at the end: the panels that show one value show them as they ended.
"""

import json
import os
import subprocess
import sys
import time

NETWORK = "cbr0"
SUBNET = "10.244.1.0/24"
# Pods each node runs once its pool has filled.
TARGETS = [180, 80]
# Pods started or stopped on a node per tick at most, and the tick.
STEP = 6
TICK_SECONDS = 0.5


class Node:
    """An emulated node: its HCN emulator state, config and plugin directories, its daemon."""

    def __init__(self, bins, root, address):
        self.bins = bins
        self.root = root
        self.state = os.path.join(root, "hcn")
        self.conf_dir = os.path.join(root, "net.d")
        self.bin_dir = os.path.join(root, "bin")
        self.ipam_dir = os.path.join(root, "ipam")
        for directory in (self.state, self.conf_dir, self.bin_dir, self.ipam_dir):
            os.makedirs(directory, exist_ok=True)
        for plugin in ("win-bridge", "host-local"):
            os.symlink(os.path.join(bins, plugin), os.path.join(self.bin_dir, plugin))
        self.hnsctl("network", "create", "--name", NETWORK, "--type", "L2Bridge",
                    "--subnet", SUBNET, "--gateway", "10.244.1.1")
        self.config = {
            "cniVersion": "1.1.0", "name": NETWORK, "type": "win-bridge",
            "ipam": {"type": "host-local", "subnet": SUBNET, "dataDir": self.ipam_dir},
        }
        with open(os.path.join(self.conf_dir, "10-cbr0.conf"), "w") as conf:
            json.dump(self.config, conf)
        self.pods = []
        self.daemon = subprocess.Popen(
            [os.path.join(bins, "cni-win"), "daemon", "--conf-dir", self.conf_dir,
             "--bin-dir", self.bin_dir, "--every", "2s", "--metrics-address", address, "--apply"],
            env=self.env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def env(self, **extra):
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HCN_EMULATOR_STATE": self.state}
        env.update(extra)
        return env

    def hnsctl(self, *args, check=True):
        ran = subprocess.run([os.path.join(self.bins, "hnsctl"), *args], env=self.env(),
                             capture_output=True, text=True, check=check)
        return ran.stdout.strip()

    def cni(self, plugin, command, container_id, netns=""):
        """Runs `plugin` for `container_id`'s eth0 as a runtime does; returns whether it
        succeeded (a failure is part of the churn, e.g. while HNS does not answer)."""
        env = self.env(CNI_COMMAND=command, CNI_CONTAINERID=container_id, CNI_IFNAME="eth0",
                       CNI_NETNS=netns, CNI_PATH=self.bin_dir)
        ran = subprocess.run([os.path.join(self.bin_dir, plugin)], env=env,
                             input=json.dumps(self.config), capture_output=True, text=True)
        return ran.returncode == 0

    def start_pod(self, container_id):
        """A pod whose sandbox came up: its namespace and win-bridge's ADD."""
        netns = self.hnsctl("namespace", "create")
        if self.cni("win-bridge", "ADD", container_id, netns):
            self.pods.append((container_id, netns))

    def stop_pod(self, index):
        """A pod deleted: win-bridge's DEL, then its namespace goes."""
        container_id, netns = self.pods.pop(index)
        self.cni("win-bridge", "DEL", container_id, netns)
        self.hnsctl("namespace", "delete", netns)

    def kill_pod(self, index):
        """A pod whose sandbox died without a DEL: its namespace goes, its endpoint and
        address stay for the daemon to find."""
        _, netns = self.pods.pop(index)
        self.hnsctl("namespace", "delete", netns)

    def crash_add(self, container_id):
        """An ADD that died after its IPAM step: a reservation and nothing else."""
        self.cni("host-local", "ADD", container_id)

    def stop(self):
        self.daemon.terminate()
        self.daemon.wait(timeout=30)


class XorShift:
    """The churn's choices, the same every run."""

    def __init__(self):
        self.state = 0x2545F4914F6CDD1D

    def below(self, bound):
        x = self.state
        x ^= (x << 13) & 0xFFFFFFFFFFFFFFFF
        x ^= x >> 7
        x ^= (x << 17) & 0xFFFFFFFFFFFFFFFF
        self.state = x
        return x % max(bound, 1)


def wanted(node, t):
    """How many pods node `node` runs at `t` (0 to 1 of the run): up over the first quarter,
    steady, then the second node drains."""
    target = TARGETS[node]
    if t < 0.25:
        return int(target * t / 0.25)
    if node == 1 and t > 0.7:
        return int(target * max(1.0 - (t - 0.7) / 0.3, 0.1))
    return target


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    bins, work = os.path.abspath(sys.argv[1]), sys.argv[2]
    seconds, addresses = int(sys.argv[3]), sys.argv[4]
    nodes = [Node(bins, os.path.join(work, f"node-{n}"), address)
             for n, address in enumerate(addresses.split(","))]
    random = XorShift()
    serial = 0
    outage_done = restart_done = False
    started = time.monotonic()
    try:
        while time.monotonic() - started < seconds:
            t = (time.monotonic() - started) / seconds
            for n, node in enumerate(nodes):
                if n == 0 and outage_done and not restart_done:
                    continue  # HNS does not answer: no pod starts or stops there either.
                want = wanted(n, t)
                if len(node.pods) < want:
                    for _ in range(min(want - len(node.pods), STEP)):
                        serial += 1
                        node.start_pod(f"pod-{serial}")
                else:
                    for _ in range(min(len(node.pods) - want, STEP)):
                        node.stop_pod(random.below(len(node.pods)))
                if node.pods and random.below(2) == 0:
                    node.stop_pod(random.below(len(node.pods)))
                if node.pods and random.below(6) == 0:
                    node.kill_pod(random.below(len(node.pods)))
                if random.below(15) == 0:
                    serial += 1
                    node.crash_add(f"crashed-{serial}")
            if t > 0.45 and not outage_done:
                outage_done = True
                for nth in range(1, 401):
                    nodes[0].hnsctl("fault", "inject", "--function", "HcnEnumerateNetworks",
                                    "--nth", str(nth), "--hresult", "ERROR_TIMEOUT")
            if t > 0.55 and not restart_done:
                restart_done = True
                nodes[0].hnsctl("fault", "clear")
                nodes[0].hnsctl("host", "restart", "--losing-endpoints")
                for _, netns in nodes[0].pods:
                    nodes[0].hnsctl("namespace", "delete", netns, check=False)
                nodes[0].pods.clear()
            time.sleep(TICK_SECONDS)
    finally:
        for node in nodes:
            node.stop()


if __name__ == "__main__":
    main()
