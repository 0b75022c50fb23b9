"""The rules underwriter as a tool-driven agent: the Spark methodology through MCP.

It takes the same path a model does: an MCP client session on the case's governed
tools, ``get_application``, ``get_credit_report`` and ``get_policy``, then the decision
computed by :func:`credit.underwriting.underwrite` on exactly the data the tools
returned (the Application and CreditReport are rebuilt from the tool results; the
policy is the registry's version whose SHA-256 ``get_policy`` reported), then
``record_decision`` once. So every run exercises the three governance seams.

Its output (the turn's surface) is the decision it produced, as canonical JSON, whether
the commit seam recorded it or refused it. A read tool that refuses ends the run: the
output is then the text the tool returned. Either way the runtime's verdict, not the
underwriter, decides what the caller sees.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from credit.canonical import dumps
from credit.catalogue import Catalogue
from credit.errors import InputError, PolicyError
from credit.models import Application, CreditReport, input_error_from
from credit.policy import Policy, PolicyRegistry
from credit.tools.governed import CaseTools, jsonable
from credit.tools.server import ToolSession, open_session
from credit.underwriters.runtime import TurnContext
from credit.underwriting import Underwriting, underwrite

__all__ = ["RulesUnderwriter"]


class RulesUnderwriter:
    """The deterministic underwriter, driving the MCP tools end to end."""

    def __init__(
        self,
        registry: PolicyRegistry | None = None,
        *,
        catalogue: Catalogue | None = None,
        name: str = "rules",
    ) -> None:
        self.registry = registry or PolicyRegistry.bundled()
        self.catalogue = catalogue
        self._name = name
        self.last: Underwriting | None = None

    @property
    def name(self) -> str:
        return self._name

    async def run(self, tools: CaseTools, context: TurnContext) -> str:
        async with open_session(tools) as session:
            return await self.drive(session)

    def policy_by_sha256(self, sha256: str) -> Policy:
        for policy in self.registry.policies:
            if policy.sha256 == sha256:
                return policy
        raise PolicyError(
            f"get_policy served a policy (sha256 {sha256[:12]}...) this underwriter's "
            "registry does not hold",
            key="sha256",
        )

    async def drive(self, session: ToolSession) -> str:
        """One pass of the methodology over an open tool session."""
        self.last = None
        app = await session.call("get_application")
        if not app.ok:
            return app.text
        report = await session.call("get_credit_report")
        if not report.ok:
            return report.text
        policy_doc = await session.call("get_policy")
        if not policy_doc.ok:
            return policy_doc.text
        case_id = str(app.data["caseId"])
        application = _rebuild(Application, app.data["application"], case_id, "application")
        credit_report = _rebuild(CreditReport, report.data["creditReport"], case_id, "creditReport")
        policy = self.policy_by_sha256(str(policy_doc.data["sha256"]))
        result = underwrite(
            application,
            credit_report,
            policy,
            case_id=case_id,
            as_of=dt.date.fromisoformat(str(app.data["asOf"])),
            catalogue=self.catalogue,
        )
        self.last = result
        wire = result.decision.to_wire()
        # The output is the decision produced, recorded or refused: the verdict, not
        # the underwriter, decides what the caller sees.
        await session.call(
            "record_decision",
            {"decision": jsonable(wire), "reasonCodes": list(result.reason_codes)},
        )
        return dumps(wire)


_M = TypeVar("_M", bound=BaseModel)


def _rebuild(model: type[_M], data: Any, case_id: str, prefix: str) -> _M:
    if not isinstance(data, dict):
        raise InputError(f"the tool returned no {prefix} object", case_id=case_id, field=prefix)
    try:
        return model.model_validate(data)
    except ValidationError as err:
        raise input_error_from(err, case_id=case_id, prefix=prefix) from None
