"""Which client a delivery came from, behind a trusted proxy.

Behind a TLS proxy every delivery reaches the inbox from the proxy's
address: keyed on that, all of them share one client's rate and
connections. With `--trusted-proxy ADDR` (an address or a CIDR network,
repeatable) a delivery whose peer is trusted is keyed on the client its
forwarding header names: the rightmost hop that is not itself a trusted
proxy (each proxy appends the address it received from, so the hops to the
left of the first untrusted one are whatever that client chose to send).
A peer that is not trusted is its own client, whatever its headers say.

The header is one of `X-Forwarded-For` (the default: what nginx, Caddy and
HAProxy set) or RFC 7239's `Forwarded`, chosen by `--forwarded-header` to
match the proxy: reading a header the proxy does not set would trust what
the client wrote in it. A hop that is no IP address (`unknown`, an
obfuscated name, garbage) ends the walk: the delivery is keyed on the last
trusted hop, the proxy itself, as without the header.

A connection is admitted before its headers are read: a trusted proxy's
connections count toward the total, not toward one client's share (the
proxy holds connections for many clients).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

__all__ = ["FORWARDED_HEADERS", "MAX_HOPS", "TrustedProxies"]

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address
#: The headers a proxy may name its client in.
FORWARDED_HEADERS = ("x-forwarded-for", "forwarded")
#: Hops read from the right of a header (a longer chain is no real path).
MAX_HOPS = 32
#: Characters of a header read (a real one is a few addresses).
_MAX_HEADER = 4096


def _address(text: str) -> Address | None:
    """An address from a hop: `1.2.3.4`, `1.2.3.4:80`, `[::1]`, `[::1]:80`, `::1`."""
    text = text.strip().strip('"')
    if text.startswith("["):
        text = text[1 : text.find("]")] if "]" in text else ""
    elif text.count(":") == 1:
        text = text.split(":", 1)[0]
    try:
        ip = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip


def _forwarded_for(element: str) -> str:
    """The `for=` of one RFC 7239 element (`for=1.2.3.4;proto=https`), or ''."""
    for pair in element.split(";"):
        name, _, value = pair.partition("=")
        if name.strip().lower() == "for":
            return value
    return ""


@dataclass(frozen=True)
class TrustedProxies:
    """The proxies whose forwarding header is believed, and which header."""

    networks: tuple[Network, ...] = ()
    header: str = "x-forwarded-for"
    _cache: dict[str, bool] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def parse(cls, given: Iterable[str], header: str = "x-forwarded-for") -> TrustedProxies:
        """From `--trusted-proxy` values (ValueError says which is not an
        address or network) and `--forwarded-header`."""
        networks = []
        for text in given:
            try:
                networks.append(ipaddress.ip_network(text.strip(), strict=False))
            except ValueError:
                raise ValueError(
                    f"--trusted-proxy {text!r}: expected an IP address or a network"
                    " (127.0.0.1, 10.0.0.0/8, ::1)"
                ) from None
        if header.lower() not in FORWARDED_HEADERS:
            raise ValueError(f"--forwarded-header {header!r}: one of X-Forwarded-For, Forwarded")
        return cls(tuple(networks), header.lower())

    def trusts(self, peer: str) -> bool:
        """`peer` (an address as the socket gives it) is a trusted proxy."""
        if not self.networks:
            return False
        known = self._cache.get(peer)
        if known is None:
            ip = _address(peer)
            known = ip is not None and any(ip in net for net in self.networks)
            if len(self._cache) < 1024:
                self._cache[peer] = known
        return known

    def client(self, peer: str, values: Sequence[str]) -> str:
        """The address a delivery from `peer` is keyed on; `values`: every
        line of its `header`, in order."""
        if not self.trusts(peer):
            return peer
        client = peer
        for hop in reversed(self._hops(values)):
            ip = _address(hop)
            if ip is None:
                return client
            client = str(ip)
            if not self.trusts(client):
                return client
        return client

    def _hops(self, values: Sequence[str]) -> Sequence[str]:
        joined = ",".join(values)[-_MAX_HEADER:]
        hops = joined.split(",")[-MAX_HOPS:]
        if self.header == "forwarded":
            return [_forwarded_for(h) for h in hops]
        return hops
