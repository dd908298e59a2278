"""yoi's MCP server driven by the official Python SDK (`mcp` from PyPI), over streamable HTTP and
over stdio (`yoi mcp`). Run by crates/yoi-cli/tests/mcp.rs, which starts `yoi serve`, claims an
attempt for the agent token and passes everything through the environment. Every check is an
assert: the process fails on the first one that does not hold. Prints one JSON line at the end
with what it measured (tokens of each audience's tools/list).
"""

import asyncio
import hashlib
import json
import os
import pathlib
import sys

import httpx
import tiktoken
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamablehttp_client
from mcp.shared.exceptions import McpError

E = os.environ
URL = E["YOI_MCP_URL"]
REPO = pathlib.Path(E["YOI_REPO"])
YOI = E["YOI_BIN"]
PHASE = E.get("PHASE", "main")
LATEST = "2025-06-18"

PERSON_TOOLS = {"list_tickets", "show_ticket", "create_ticket", "edit_ticket", "add_relation",
                "comment", "mark_ready", "inbox"}
READ_TOOLS = {"list_tickets", "show_ticket", "inbox"}
AGENT_TOOLS = {"my_ticket", "read_packet", "post_note", "ask_question", "propose_ticket",
               "activate_skill"}
BRIEF = "## Intent\nMake it work.\n\n## Acceptance criteria\n- it works\n\n## Validation\n`cargo test`\n"


def tree():
    """Every ticket file's digest: what a refusal must leave as it was."""
    out = {}
    for p in sorted((REPO / ".yoi/tickets").rglob("*")):
        if p.is_file():
            out[str(p.relative_to(REPO))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def text(result):
    assert len(result.content) == 1 and result.content[0].type == "text", result
    return result.content[0].text


async def ok(s, name, args):
    r = await s.call_tool(name, args)
    assert not r.isError, f"{name} {args}: {text(r)}"
    return text(r)


async def fails(s, name, args, needle):
    """A tool failure: a result with isError and the reason, nothing written."""
    before = tree()
    r = await s.call_tool(name, args)
    assert r.isError, f"{name} {args} should fail: {text(r)}"
    assert needle in text(r), f"{name} {args}: {needle!r} not in {text(r)!r}"
    assert tree() == before, f"{name} {args} wrote although it failed"
    return text(r)


async def unknown(s, name, args):
    """A tool outside this token's list: the protocol's invalid-params error, nothing written."""
    before = tree()
    try:
        r = await s.call_tool(name, args)
    except McpError as e:
        assert e.error.code == -32602, e.error
        assert name in e.error.message, e.error
    else:
        raise AssertionError(f"{name} answered {r}")
    assert tree() == before, f"{name} wrote although it was refused"


def flatten(e):
    """An exception and, for a group, everything in it."""
    if isinstance(e, BaseExceptionGroup):
        return [x for inner in e.exceptions for x in flatten(inner)]
    return [e]


def http(token):
    return streamablehttp_client(URL, headers={"Authorization": f"Bearer {token}"})


def stdio(token=None):
    env = {k: v for k, v in E.items() if k != "YOI_TOKEN"}
    if token:
        env["YOI_TOKEN"] = token
    return stdio_client(StdioServerParameters(command=YOI, args=["mcp"], cwd=str(REPO), env=env))


async def session_of(transport, check):
    async with transport as streams:
        async with ClientSession(streams[0], streams[1]) as s:
            init = await s.initialize()
            assert init.protocolVersion == LATEST, init
            assert init.serverInfo.name == "yoi", init
            return await check(s)


async def person(s):
    names = {t.name for t in (await s.list_tools()).tools}
    assert names == PERSON_TOOLS, names
    await s.send_ping()
    made = await ok(s, "create_ticket", {"title": "Planned over MCP", "body": "## Intent\nx\n"})
    assert made.startswith("created ") and "(planning)" in made, made
    a = made.split()[1]
    other = (await ok(s, "create_ticket", {"title": "Its dependency"})).split()[1]
    await fails(s, "create_ticket", {}, "`title` is required")
    await fails(s, "create_ticket", {"title": "x", "labels": ["a"]}, "unknown argument `labels`")
    await fails(s, "create_ticket", {"title": "   "}, "invalid")
    await fails(s, "create_ticket", {"title": "x", "depends_on": ["no-such-ticket"]}, "no-such-ticket")

    listed = await ok(s, "list_tickets", {"search": "Planned over"})
    assert a in listed and other not in listed, listed
    assert "[planning] Planned over MCP" in listed, listed
    await fails(s, "list_tickets", {"state": "bogus"}, "invalid arguments")
    await fails(s, "list_tickets", {"limit": "ten"}, "`limit` must be integer")

    shown = await ok(s, "show_ticket", {"id": a})
    assert shown.startswith(f"{a} [planning] Planned over MCP"), shown
    assert "brief is missing" in shown and "thread:" not in shown, shown
    assert "thread:" in await ok(s, "show_ticket", {"id": a, "thread": True})
    await fails(s, "show_ticket", {"id": "01NOSUCHTICKET"}, "not_found")
    await fails(s, "show_ticket", {}, "`id` is required")

    edited = await ok(s, "edit_ticket", {"id": a, "body": BRIEF})
    assert edited.startswith("edit "), edited
    await fails(s, "edit_ticket", {"id": a, "body": 3}, "`body` must be string")
    await fails(s, "edit_ticket", {"id": "01NOSUCHTICKET", "title": "y"}, "not_found")

    await ok(s, "add_relation", {"id": a, "kind": "depends_on", "target": other})
    assert f"blocked by: {other}" in await ok(s, "show_ticket", {"id": a})
    await fails(s, "add_relation", {"id": a, "kind": "likes", "target": other}, "`kind` must be")
    await fails(s, "add_relation", {"id": a, "kind": "depends_on", "target": a}, "")

    said = await ok(s, "comment", {"id": a, "body": "Looks right to me."})
    assert said.startswith("comment "), said
    await fails(s, "comment", {"id": a, "body": "/review"}, "invokes a workflow")
    await fails(s, "comment", {"id": a}, "`body` is required")

    marked = await ok(s, "mark_ready", {"id": a})
    assert "planning -> ready" in marked, marked
    await fails(s, "mark_ready", {"id": a}, "")  # already ready: refused by the store
    await fails(s, "mark_ready", {"id": other}, "")  # no brief

    entries = await ok(s, "inbox", {})
    assert "open entr" in entries, entries
    await fails(s, "inbox", {"all": True}, "unknown argument")

    # Queueing stays with people: no tool for it, and asking writes nothing.
    for refused in ["queue", "answer", "approve_skill", "accept_offer", "ask_question"]:
        await unknown(s, refused, {"id": a})
    assert f"{a} [ready]" in await ok(s, "show_ticket", {"id": a})
    return a


async def reader(s):
    names = {t.name for t in (await s.list_tools()).tools}
    assert names == READ_TOOLS, names
    await unknown(s, "create_ticket", {"title": "by a read token"})
    await unknown(s, "comment", {"id": E["OWN"], "body": "x"})


async def agent(s):
    own = E["OWN"]
    names = {t.name for t in (await s.list_tools()).tools}
    assert names == AGENT_TOOLS, names
    mine = await ok(s, "my_ticket", {})
    assert mine.startswith(f"{own} [inprogress]"), mine
    assert f"latest attempt: {E['ASSIGNMENT']}" in mine, mine
    await fails(s, "my_ticket", {"id": E["OTHER"]}, "unknown argument `id`")

    packet = json.loads(await ok(s, "read_packet", {}))
    assert packet["packet"]["intent"] == "Add a greeting.", packet
    await fails(s, "read_packet", {"ticket": E["OTHER"]}, "unknown argument")

    noted = await ok(s, "post_note", {"body": "Halfway: tests written."})
    assert noted.startswith(f"comment {own}"), noted
    await fails(s, "post_note", {}, "`body` is required")
    await fails(s, "post_note", {"body": ""}, "")

    await fails(s, "ask_question", {"questions": []}, "ask at least one")
    await fails(s, "ask_question", {"questions": "one"}, "must be array")
    asked = await ok(s, "ask_question", {"questions": ["Which locale is the default?"]})
    assert asked.startswith(f"ask {own}"), asked

    proposed = await ok(s, "propose_ticket", {"title": "Follow-up: locales", "body": "Add more."})
    assert proposed.startswith("proposed ") and "planning" in proposed, proposed
    await fails(s, "propose_ticket", {"body": "no title"}, "`title` is required")

    skill = await ok(s, "activate_skill", {"name": "deploy-notes"})
    assert "Write deploy notes" in skill, skill
    assert "resource: skill://deploy-notes/references/format.md" in skill, skill
    # The skill's files as MCP resources.
    uris = [str(r.uri) for r in (await s.list_resources()).resources]
    assert uris.count("skill://deploy-notes/SKILL.md") == 1, uris
    assert "skill://deploy-notes/references/format.md" in uris, uris
    read = await s.read_resource("skill://deploy-notes/references/format.md")
    assert read.contents[0].text == "One line per change.\n", read
    for bad, code in [("skill://deploy-notes/references/none.md", -32002),
                      ("skill://deploy-notes/../../etc/passwd", -32002),
                      ("file:///etc/passwd", -32602)]:
        try:
            await s.read_resource(bad)
        except McpError as e:
            assert e.error.code == code, (bad, e.error)
        else:
            raise AssertionError(f"{bad} was read")
    await fails(s, "activate_skill", {"name": "no-such-skill"}, "no-such-skill")

    # Nothing outside its own attempt: the person tools do not exist for this token.
    for refused in ["create_ticket", "comment", "mark_ready", "queue", "list_tickets", "edit_ticket"]:
        await unknown(s, refused, {"id": E["OTHER"], "title": "x", "body": "x"})
    return proposed.split()[1]


def tokens_of(token):
    """The tokens of the whole tools/list answer, as cl100k_base counts them."""
    enc = tiktoken.get_encoding("cl100k_base")
    r = httpx.post(URL, headers={"Authorization": f"Bearer {token}"},
                   json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert r.status_code == 200, r.text
    return len(enc.encode(r.text))


def protocol_errors(token):
    h = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}

    def post(body, headers=None):
        return httpx.post(URL, headers={**h, **(headers or {})}, content=body)

    r = post(b"{not json")
    assert r.status_code == 400 and r.json()["error"]["code"] == -32700, r.text
    assert r.json()["id"] is None, r.text
    r = post(json.dumps([{"jsonrpc": "2.0", "id": 1, "method": "ping"}]))
    assert r.status_code == 400 and r.json()["error"]["code"] == -32600, r.text
    r = post(json.dumps({"jsonrpc": "1.0", "id": 1, "method": "ping"}))
    assert r.json()["error"]["code"] == -32600, r.text
    r = post(json.dumps({"jsonrpc": "2.0", "id": 7}))
    assert r.json()["error"]["code"] == -32600, r.text
    r = post(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "resources/subscribe"}))
    assert r.status_code == 200 and r.json() == {
        "jsonrpc": "2.0", "id": 2,
        "error": {"code": -32601, "message": "unknown method `resources/subscribe`"}}, r.text
    r = post(json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "nope"}}))
    assert r.json()["error"]["code"] == -32602, r.text
    r = post(json.dumps({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": []}))
    assert r.json()["error"]["code"] == -32602, r.text
    r = post(json.dumps({"jsonrpc": "2.0", "id": 5, "method": "ping"}), {"MCP-Protocol-Version": "1999-01-01"})
    assert r.status_code == 400 and "1999-01-01" in r.json()["error"]["message"], r.text
    r = post(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
    assert r.status_code == 202 and r.content == b"", r
    for asked, answered in [("2025-03-26", "2025-03-26"), ("2024-11-05", "2024-11-05"),
                            ("2099-01-01", LATEST)]:
        r = post(json.dumps({"jsonrpc": "2.0", "id": "i", "method": "initialize", "params": {
            "protocolVersion": asked, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}))
        assert r.json()["result"]["protocolVersion"] == answered, (asked, r.text)
    assert httpx.get(URL, headers=h).status_code == 405
    r = httpx.post(URL, headers={"Content-Type": "application/json"}, content=b"{}")
    assert r.status_code == 401, r.text
    r = httpx.post(URL, headers={"Authorization": "Bearer nope"}, content=b"{}")
    assert r.status_code == 401, r.text


async def main():
    human, read, agent_token = E["HUMAN"], E["READ"], E["AGENT"]
    if PHASE == "ended":
        # The claim ended: the token can do nothing, over either transport.
        before = tree()
        r = httpx.post(URL, headers={"Authorization": f"Bearer {agent_token}"},
                       json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert r.status_code == 401 and "ended" in r.text, r.text
        try:
            await session_of(http(agent_token), lambda s: s.list_tools())
        except BaseException:  # the SDK raises on the 401, in a task group
            pass
        else:
            raise AssertionError("an ended claim's token opened an MCP session over HTTP")
        try:
            await session_of(stdio(agent_token), lambda s: s.list_tools())
        except BaseException as e:  # the relay's -32001 error, raised inside a task group
            errors = [x for x in flatten(e) if isinstance(x, McpError)]
            assert errors, repr(e)
            message = errors[0].error.message
            assert "HTTP 401" in message and "ended" in message, message
        else:
            raise AssertionError("an ended claim's token opened an MCP session over stdio")
        assert tree() == before
        print(json.dumps({"ended": "refused"}))
        return

    protocol_errors(human)
    made = await session_of(http(human), person)
    await session_of(http(read), reader)
    proposed = await session_of(http(agent_token), agent)
    # The same tools over stdio, through `yoi mcp`: a person (the workspace's admin token) and
    # the agent (YOI_TOKEN).
    async def stdio_person(s):
        names = {t.name for t in (await s.list_tools()).tools}
        assert names == PERSON_TOOLS, names
        shown = await ok(s, "show_ticket", {"id": proposed})
        assert shown.startswith(f"{proposed} [planning] Follow-up: locales"), shown
        assert f"Proposed by attempt 1 of step `implement` of {E['OWN']}" in shown, shown
        created = await ok(s, "create_ticket", {"title": "Over stdio"})
        await fails(s, "edit_ticket", {"id": made, "title": 5}, "must be string")
        await unknown(s, "queue", {"id": made})
        return created

    await session_of(stdio(), stdio_person)

    async def stdio_agent(s):
        names = {t.name for t in (await s.list_tools()).tools}
        assert names == AGENT_TOOLS, names
        await ok(s, "post_note", {"body": "Noted over stdio."})
        await fails(s, "activate_skill", {"name": ""}, "")
        await unknown(s, "create_ticket", {"title": "x"})

    await session_of(stdio(agent_token), stdio_agent)
    counts = {"person": tokens_of(human), "read": tokens_of(read), "agent": tokens_of(agent_token)}
    for who, n in counts.items():
        assert n <= 2000, (who, n)
    print(json.dumps({"tools_list_tokens": counts, "made": made, "proposed": proposed}))


asyncio.run(main())
