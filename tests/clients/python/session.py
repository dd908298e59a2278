"""A scripted session through the Python client that openapi-python-client generates from the
served OpenAPI document (issue 41): every answer comes back as a typed object, and a refused
transition's body parses as the typed error with its typed details, and the event stream's first
event parses as the typed live event of its kind. `scripts/client-session python` generates the
client, type-checks this file with `mypy --strict` and runs it against a live `yoi serve`; it
reads the server's address and a human token from YOI_URL and YOI_TOKEN.
"""

import json
import os
import sys
from typing import NoReturn

from yoi_client import AuthenticatedClient
from yoi_client.api.tickets import (
    add_comment,
    create_ticket,
    edit_ticket,
    list_tickets,
    mark_ready,
    queue,
    show_blockers,
    show_ticket,
)
from yoi_client.models import (
    CommentBody,
    CreateBody,
    EditBody,
    ErrorBody,
    KnownEventKind,
    ListResponse,
    LiveTicketCreated,
    OperationResult,
    RelationView,
    StaleStateDetails,
    State,
    Ticket,
    TransitionBody,
    TransitionBodyExpectedState,
)
from yoi_client.types import UNSET

BRIEF = "## Intent\nA ticket made by the generated client.\n\n## Acceptance criteria\n- it exists\n\n## Validation\n`true`\n"


def result(answer: ErrorBody | OperationResult | None, what: str) -> OperationResult:
    """The operation's result, or the run stops naming the refusal."""
    if not isinstance(answer, OperationResult):
        fail(f"{what}: expected an OperationResult, got {answer!r}")
    return answer


def fail(message: str) -> NoReturn:
    print(f"python client session: {message}", file=sys.stderr)
    sys.exit(1)


def check(condition: bool, message: str) -> None:
    if not condition:
        fail(message)


def main() -> None:
    client = AuthenticatedClient(
        base_url=os.environ["YOI_URL"],
        token=os.environ["YOI_TOKEN"],
        raise_on_unexpected_status=True,
    )
    with client as c:
        # Create two tickets, the second depending on the first.
        first = result(create_ticket.sync(client=c, body=CreateBody(title="First from Python", body=BRIEF)), "create")
        check(first.to == State.PLANNING and not first.replayed, f"create: {first!r}")
        second = result(
            create_ticket.sync(
                client=c,
                body=CreateBody(title="Second from Python", body=BRIEF, depends_on=[first.ticket]),
            ),
            "create with a dependency",
        )

        # Mark both ready and queue the first.
        ready = result(mark_ready.sync(first.ticket, client=c, body=TransitionBody()), "mark-ready")
        check((ready.from_, ready.to) == (State.PLANNING, State.READY), f"mark-ready: {ready!r}")
        result(mark_ready.sync(second.ticket, client=c, body=TransitionBody()), "mark-ready")
        queued = result(
            queue.sync(
                first.ticket,
                client=c,
                body=TransitionBody(expected_state=TransitionBodyExpectedState.READY),
            ),
            "queue",
        )
        check(queued.to == State.QUEUED, f"queue: {queued!r}")

        # The ready queue holds the second ticket, as a typed summary.
        page = list_tickets.sync(client=c, state="ready")
        if not isinstance(page, ListResponse):
            fail(f"list: expected a ListResponse, got {page!r}")
        ids = [t.id for t in page.tickets]
        check(second.ticket in ids and first.ticket not in ids, f"list state=ready: {ids}")
        summary = next(t for t in page.tickets if t.id == second.ticket)
        check(summary.state == State.READY and summary.title == "Second from Python", f"{summary!r}")
        check([b.ticket for b in summary.blockers] == [first.ticket], f"blockers: {summary.blockers!r}")

        # Edit the title and the body at once, comment, and read it all back.
        result(
            edit_ticket.sync(second.ticket, client=c, body=EditBody(title="Second, edited", body=BRIEF + "\nEdited.\n")),
            "edit",
        )
        comment = result(
            add_comment.sync(second.ticket, client=c, body=CommentBody(body="A comment from Python.")),
            "comment",
        )
        check(isinstance(comment.event_id, str), f"comment: {comment!r}")
        shown = show_ticket.sync(second.ticket, client=c)
        if not isinstance(shown, Ticket):
            fail(f"show: expected a Ticket, got {shown!r}")
        check(shown.title == "Second, edited" and shown.body.rstrip().endswith("Edited."), f"show: {shown.title!r}")
        check(shown.state == State.READY, f"show: state {shown.state!r}")
        kinds = [e.kind for e in shown.events]
        check(kinds[0] == "create" and "comment" in kinds, f"show: events {kinds}")
        check(shown.created_at.tzinfo is not None, f"show: created_at {shown.created_at!r}")
        check(shown.resolution is UNSET, f"show: resolution {shown.resolution!r}")

        # Its blockers name the first ticket (queued, or accepted by now) and its state.
        view = show_blockers.sync(second.ticket, client=c)
        if not isinstance(view, RelationView):
            fail(f"blockers: expected a RelationView, got {view!r}")
        check([(b.ticket, b.reason_kind) for b in view.blockers] == [(first.ticket, "depends_on")], f"{view.blockers!r}")

        # Queueing it as if it were still in planning is refused (compare-and-swap); the answer's
        # body is the typed error.
        refused = queue.sync_detailed(
            second.ticket,
            client=c,
            body=TransitionBody(expected_state=TransitionBodyExpectedState.PLANNING),
        )
        check(refused.status_code == 409, f"a stale queue: {refused.status_code}")
        error = refused.parsed
        if not isinstance(error, ErrorBody):
            fail(f"a stale queue: expected an ErrorBody, got {error!r}")
        check(error.error.code == "stale_state", f"a stale queue: {error.error!r}")
        details = error.error.details
        if not isinstance(details, StaleStateDetails):
            fail(f"a stale queue: expected StaleStateDetails, got {details!r}")
        check(
            (details.ticket, details.expected, details.found) == (second.ticket, State.PLANNING, State.READY),
            f"a stale queue: {details!r}",
        )

        # The event stream's first event: `id`, `event` and `data`, a JSON live event whose kind
        # names its schema.
        with c.get_httpx_client().stream("GET", "/api/v1/events", params={"after": 0}) as stream:
            check(stream.status_code == 200, f"events: {stream.status_code}")
            fields: dict[str, str] = {}
            for line in stream.iter_lines():
                if line == "" and "data" in fields:
                    break
                if line.startswith(":") or ":" not in line:
                    continue
                name, _, value = line.partition(":")
                fields[name] = value.lstrip()
        check(fields.get("event") == "ticket_created", f"events: the first is {fields!r}")
        event = LiveTicketCreated.from_dict(json.loads(fields["data"]))
        check(fields.get("id") == str(event.seq), f"events: {fields!r}")
        check(event.ticket == first.ticket, f"events: {event!r}")
        check(
            event.payload.event_kind == KnownEventKind.CREATE and event.payload.event_id == first.event_id,
            f"events: {event.payload!r}",
        )
    print("python client session: ok")


if __name__ == "__main__":
    main()
