"""Hosts on one machine for the two-host benchmark cases: network namespaces (iproute2) joined
through a bridge by veth pairs, each link shaped by tc's token bucket filter, as
tests/net_hosts.hpp makes them for the tests. Needs root."""
import os
import re
import subprocess


def _sh(command):
    subprocess.run(command, shell=True, check=True, stdout=subprocess.DEVNULL)


class NetHosts:
    """`count` hosts "dtwinb<PID>h<i>" at 10.77.0.<i+1>/24, each link `rate` ("100mbit") each
    way; a context manager that deletes the namespaces on exit."""

    def __init__(self, count, rate):
        self.prefix = f"dtwinb{os.getpid()}"
        self.switch = self.prefix + "sw"
        self.hosts = [f"{self.prefix}h{i}" for i in range(count)]
        self.rate = rate

    @staticmethod
    def address(i):
        return f"10.77.0.{i + 1}"

    def _shape(self, netns, device):
        # The burst of a wire, as tests/net_hosts.hpp gives it: 1 ms at the rate, at least two
        # full frames.
        number, unit = re.fullmatch(r"([0-9.]+)([kmg]bit)", self.rate).groups()
        bits = float(number) * {"kbit": 1e3, "mbit": 1e6, "gbit": 1e9}[unit]
        burst = max(3028, int(bits / 8 / 1000))
        _sh(f"tc -n {netns} qdisc add dev {device} root tbf rate {self.rate} "
            f"burst {burst} latency 100ms")

    def __enter__(self):
        try:
            _sh(f"ip netns add {self.switch}")
            _sh(f"ip -n {self.switch} link add br0 type bridge")
            _sh(f"ip -n {self.switch} link set br0 up")
            for i, host in enumerate(self.hosts):
                port = f"p{i}"
                _sh(f"ip netns add {host}")
                _sh(f"ip -n {host} link set lo up")
                _sh(f"ip -n {host} link add eth0 type veth peer name {port} netns {self.switch}")
                _sh(f"ip -n {host} addr add {self.address(i)}/24 dev eth0")
                _sh(f"ip -n {host} link set eth0 up")
                _sh(f"ip -n {self.switch} link set {port} master br0 up")
                self._shape(host, "eth0")
                self._shape(self.switch, port)
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc):
        for netns in [*self.hosts, self.switch]:
            subprocess.run(["ip", "netns", "del", netns], stderr=subprocess.DEVNULL)
