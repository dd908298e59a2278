// A scripted session through a TypeScript client made from the served OpenAPI document (issue
// 41): `openapi-typescript` turns the document into `schema.d.ts`, `openapi-fetch` calls the API
// with those types, and `tsc --strict` checks every request and answer below. The same session
// as tests/clients/python/session.py.
// `scripts/client-session typescript` generates the types, type-checks and runs this file against a live
// `yoi serve`; it reads the server's address and a human token from YOI_URL and YOI_TOKEN.

import createClient from "openapi-fetch";
import type { components, paths } from "./schema.js";

type OperationResult = components["schemas"]["OperationResult"];
type Ticket = components["schemas"]["Ticket"];
type LiveEvent = components["schemas"]["LiveEvent"];

const BRIEF =
    "## Intent\nA ticket made by the generated client.\n\n## Acceptance criteria\n- it exists\n\n## Validation\n`true`\n";

function fail(message: string): never {
    console.error(`typescript client session: ${message}`);
    process.exit(1);
}

function check(condition: boolean, message: string): void {
    if (!condition) {
        fail(message);
    }
}

/// The typed answer of a call, or the run stops naming the typed error.
function ok<T>(what: string, r: { data?: T; error?: components["schemas"]["ErrorBody"] }): T {
    if (r.data === undefined) {
        fail(`${what}: ${r.error ? `${r.error.error.code}: ${r.error.error.message}` : "no answer"}`);
    }
    return r.data;
}

const url = process.env.YOI_URL ?? fail("YOI_URL is not set");
const token = process.env.YOI_TOKEN ?? fail("YOI_TOKEN is not set");
const client = createClient<paths>({ baseUrl: url, headers: { Authorization: `Bearer ${token}` } });

// Create two tickets, the second depending on the first.
const first: OperationResult = ok(
    "create",
    await client.POST("/api/v1/tickets", { body: { title: "First from TypeScript", body: BRIEF } }),
);
check(first.to === "planning" && !first.replayed, `create: ${JSON.stringify(first)}`);
const second = ok(
    "create with a dependency",
    await client.POST("/api/v1/tickets", {
        body: { title: "Second from TypeScript", body: BRIEF, depends_on: [first.ticket] },
    }),
);

// Mark both ready (the body may be left out) and queue the first with an expected state.
const ready = ok(
    "mark-ready",
    await client.POST("/api/v1/tickets/{id}/mark-ready", { params: { path: { id: first.ticket } } }),
);
check(ready.from === "planning" && ready.to === "ready", `mark-ready: ${JSON.stringify(ready)}`);
ok("mark-ready", await client.POST("/api/v1/tickets/{id}/mark-ready", { params: { path: { id: second.ticket } } }));
const queued = ok(
    "queue",
    await client.POST("/api/v1/tickets/{id}/queue", {
        params: { path: { id: first.ticket } },
        body: { expected_state: "ready" },
    }),
);
check(queued.to === "queued", `queue: ${JSON.stringify(queued)}`);

// The ready tickets hold the second one, as a typed summary with its blocker.
const page = ok("list", await client.GET("/api/v1/tickets", { params: { query: { state: "ready" } } }));
const summary = page.tickets.find((t) => t.id === second.ticket) ?? fail(`list: ${JSON.stringify(page)}`);
check(summary.state === "ready" && summary.blockers[0]?.ticket === first.ticket, JSON.stringify(summary));

// Edit title and body at once, comment, and read it all back.
ok(
    "edit",
    await client.PATCH("/api/v1/tickets/{id}", {
        params: { path: { id: second.ticket } },
        body: { title: "Second, edited", body: `${BRIEF}\nEdited.\n` },
    }),
);
const comment = ok(
    "comment",
    await client.POST("/api/v1/tickets/{id}/comments", {
        params: { path: { id: second.ticket } },
        body: { body: "A comment from TypeScript." },
    }),
);
check(typeof comment.event_id === "string", `comment: ${JSON.stringify(comment)}`);
const shown: Ticket = ok("show", await client.GET("/api/v1/tickets/{id}", { params: { path: { id: second.ticket } } }));
check(shown.title === "Second, edited" && shown.body.trimEnd().endsWith("Edited."), `show: ${shown.title}`);
const kinds = shown.events.map((e) => e.kind);
check(kinds[0] === "create" && kinds.includes("comment"), `show: events ${kinds.join(", ")}`);

// Its blockers name the first ticket.
const view = ok(
    "blockers",
    await client.GET("/api/v1/tickets/{id}/blockers", { params: { path: { id: second.ticket } } }),
);
check(
    view.blockers.length === 1 && view.blockers[0]?.ticket === first.ticket && view.blockers[0]?.reason_kind === "depends_on",
    `blockers: ${JSON.stringify(view.blockers)}`,
);

// Queueing it as if it were still in planning is refused; the body is the typed error.
const stale = await client.POST("/api/v1/tickets/{id}/queue", {
    params: { path: { id: second.ticket } },
    body: { expected_state: "planning" },
});
check(stale.response.status === 409, `a stale queue: ${stale.response.status}`);
check(stale.error?.error.code === "stale_state", `a stale queue: ${JSON.stringify(stale.error)}`);
// Its details are one of the typed shapes; a stale state names the expected and found states.
const details = stale.error?.error.details;
check(
    details !== undefined && details !== null && "expected" in details && "found" in details
        && details.expected === "planning" && details.found === "ready",
    `a stale queue: ${JSON.stringify(details)}`,
);

// The event stream's first event: `id`, `event` and `data`, a JSON LiveEvent.
const stream = await fetch(`${url}/api/v1/events?after=0`, { headers: { Authorization: `Bearer ${token}` } });
check(stream.ok && stream.body !== null, `events: ${stream.status}`);
const reader = stream.body!.getReader();
let text = "";
while (!text.includes("\n\n")) {
    const chunk = await reader.read();
    if (chunk.done) {
        fail(`events: the stream ended after ${JSON.stringify(text)}`);
    }
    text += new TextDecoder().decode(chunk.value);
}
await reader.cancel();
const fields = new Map(
    text
        .split("\n\n")[0]!
        .split("\n")
        .filter((l) => !l.startsWith(":") && l.includes(":"))
        .map((l): [string, string] => [l.slice(0, l.indexOf(":")), l.slice(l.indexOf(":") + 1).trimStart()]),
);
const event: LiveEvent = JSON.parse(fields.get("data") ?? fail(`events: no data in ${JSON.stringify(text)}`));
check(fields.get("id") === String(event.seq) && fields.get("event") === event.kind, `events: ${JSON.stringify(text)}`);
if (event.kind !== "ticket_created") {
    fail(`events: the first is ${JSON.stringify(event)}`);
}
// The kind narrows the event to its schema, whose payload is the thread event's.
check(
    event.ticket === first.ticket && event.payload.event_kind === "create" && event.payload.event_id === first.event_id,
    `events: ${JSON.stringify(event)}`,
);
console.log("typescript client session: ok");
