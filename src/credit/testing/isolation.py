"""Is this process's network loopback only?

The LLM underwriter's real-path tests run the Claude Code CLI, which may reach only
the loopback stand-in of the Messages API. They run in a network namespace of their
own (``unshare -n``, loopback brought up, nothing else) and check that first:
:func:`interfaces_up` asks the kernel, for this process's network namespace, which
interfaces there are (``if_nameindex``) and which are up (``SIOCGIFFLAGS``,
``IFF_UP``). (``/sys/class/net`` would not do: it shows the namespace sysfs was
mounted in, not this process's.)
"""

from __future__ import annotations

import fcntl
import socket
import struct
from collections.abc import Callable, Iterable
from typing import Final

__all__ = ["IFF_UP", "interface_flags", "interfaces_up", "loopback_only"]

IFF_UP: Final = 0x1  # <linux/if.h>: the interface is administratively up
_SIOCGIFFLAGS: Final = 0x8913  # <linux/sockios.h>
_IFNAMSIZ: Final = 16

Interfaces = Callable[[], Iterable[tuple[str, int]]]


def interface_flags() -> list[tuple[str, int]]:
    """Every interface of this process's network namespace with its flags."""
    found = []
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        for _, name in socket.if_nameindex():
            request = struct.pack(f"{_IFNAMSIZ}sH", name.encode()[: _IFNAMSIZ - 1], 0)
            answer = fcntl.ioctl(sock.fileno(), _SIOCGIFFLAGS, request)
            (flags,) = struct.unpack_from("H", answer, _IFNAMSIZ)
            found.append((name, flags))
    return found


def interfaces_up(interfaces: Interfaces = interface_flags) -> tuple[str, ...]:
    """The names of the interfaces that are up, sorted."""
    return tuple(sorted(name for name, flags in interfaces() if flags & IFF_UP))


def loopback_only(interfaces: Interfaces = interface_flags) -> bool:
    """True when ``lo`` is up and no other interface is."""
    return interfaces_up(interfaces) == ("lo",)
