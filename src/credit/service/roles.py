"""Who may call the service: a principal (a named key holder) and its one role.

The roles and the actor are the core's (:mod:`credit.roles`); a service principal is
an :class:`~credit.roles.Actor`.
"""

from __future__ import annotations

from credit.roles import Actor, Role

__all__ = ["Principal", "Role"]

Principal = Actor
