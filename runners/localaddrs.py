"""Every address of this machine's network interfaces, IPv4 and IPv6.

The target guard (runners/netguard.py) treats these as "this machine" like
loopback: a service listening on all interfaces (a container port,
`listen_addresses='*'`, gunicorn on 0.0.0.0) is reached through the address
of eth0 as well as through 127.0.0.1.

Read with getifaddrs(3) through ctypes (the standard library has no call for
it; socket.if_nameindex plus SIOCGIFADDR would miss secondary IPv4 and all
IPv6 addresses). Interfaces come and go (a container's veth, a VPN), so the
answer is cached for CACHE_SECONDS only.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import ipaddress
import socket
import threading
import time

CACHE_SECONDS = 5.0

_lock = threading.Lock()
_cached: tuple[float, frozenset] = (float("-inf"), frozenset())


class _SockAddr(ctypes.Structure):
    _fields_ = [("sa_family", ctypes.c_ushort), ("sa_data", ctypes.c_ubyte * 14)]


class _SockAddrIn(ctypes.Structure):
    _fields_ = [
        ("sin_family", ctypes.c_ushort),
        ("sin_port", ctypes.c_uint16),
        ("sin_addr", ctypes.c_ubyte * 4),
    ]


class _SockAddrIn6(ctypes.Structure):
    _fields_ = [
        ("sin6_family", ctypes.c_ushort),
        ("sin6_port", ctypes.c_uint16),
        ("sin6_flowinfo", ctypes.c_uint32),
        ("sin6_addr", ctypes.c_ubyte * 16),
        ("sin6_scope_id", ctypes.c_uint32),
    ]


class _IfAddrs(ctypes.Structure):
    pass


_IfAddrs._fields_ = [
    ("ifa_next", ctypes.POINTER(_IfAddrs)),
    ("ifa_name", ctypes.c_char_p),
    ("ifa_flags", ctypes.c_uint),
    ("ifa_addr", ctypes.POINTER(_SockAddr)),
    ("ifa_netmask", ctypes.POINTER(_SockAddr)),
    ("ifa_ifu", ctypes.POINTER(_SockAddr)),
    ("ifa_data", ctypes.c_void_p),
]


def _read_interfaces() -> frozenset:
    """getifaddrs(3): the IPv4 and IPv6 address of every interface entry (Linux layout)."""
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    head = ctypes.POINTER(_IfAddrs)()
    if libc.getifaddrs(ctypes.byref(head)) != 0:
        raise OSError(ctypes.get_errno(), "getifaddrs failed")
    addresses = set()
    try:
        entry = head
        while entry:
            sockaddr = entry.contents.ifa_addr
            if sockaddr:
                address = _address(sockaddr)
                if address is not None:
                    addresses.add(address)
            entry = entry.contents.ifa_next
    finally:
        libc.freeifaddrs(head)
    return frozenset(addresses)


def _address(sockaddr):
    family = sockaddr.contents.sa_family
    if family == socket.AF_INET:
        raw = ctypes.cast(sockaddr, ctypes.POINTER(_SockAddrIn)).contents.sin_addr
        return ipaddress.IPv4Address(bytes(raw))
    if family == socket.AF_INET6:
        raw = ctypes.cast(sockaddr, ctypes.POINTER(_SockAddrIn6)).contents.sin6_addr
        return ipaddress.IPv6Address(bytes(raw))
    return None


def local_addresses() -> frozenset:
    """This machine's interface addresses, read at most every CACHE_SECONDS.

    Should the call fail (no getifaddrs), the answer is empty: the guard
    then knows loopback and unspecified addresses only, as before."""
    global _cached
    with _lock:
        read_at, addresses = _cached
        now = time.monotonic()
        if now - read_at >= CACHE_SECONDS:
            try:
                addresses = _read_interfaces()
            except (OSError, AttributeError):
                addresses = frozenset()
            _cached = (now, addresses)
        return addresses
