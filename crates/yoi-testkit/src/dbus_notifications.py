"""A desktop notification server for tests: owns org.freedesktop.Notifications on the bus at
argv[1] (with jeepney from PyPI, an independent implementation of the D-Bus protocol) and writes
every Notify call it answers as one JSON line to argv[2]. Prints "ready" once it owns the name.

argv[3] is the comma-separated capabilities GetCapabilities answers (e.g. "body,body-markup").
"""

import json
import sys

from jeepney import HeaderFields, MessageType, new_error, new_method_return
from jeepney.bus_messages import message_bus
from jeepney.io.blocking import open_dbus_connection

NAME = "org.freedesktop.Notifications"
PATH = "/org/freedesktop/Notifications"


def main():
    address, record, caps = sys.argv[1], sys.argv[2], sys.argv[3]
    capabilities = [c for c in caps.split(",") if c]
    conn = open_dbus_connection(bus=address)
    # DBUS_NAME_FLAG_DO_NOT_QUEUE: owning it now or failing, never waiting in line.
    reply = conn.send_and_get_reply(message_bus.RequestName(NAME, 4))
    if reply.body[0] != 1:
        print(f"could not own {NAME}: {reply.body}", file=sys.stderr, flush=True)
        return 1
    print("ready", flush=True)
    next_id = 0
    while True:
        msg = conn.receive()
        h = msg.header
        if h.message_type != MessageType.method_call:
            continue
        member = h.fields.get(HeaderFields.member)
        interface = h.fields.get(HeaderFields.interface)
        path = h.fields.get(HeaderFields.path)
        if path != PATH or interface not in (NAME, None):
            conn.send(new_error(msg, "org.freedesktop.DBus.Error.UnknownObject"))
        elif member == "GetCapabilities":
            conn.send(new_method_return(msg, "as", (capabilities,)))
        elif member == "GetServerInformation":
            conn.send(new_method_return(msg, "ssss", ("yoi-test", "yoi", "1", "1.2")))
        elif member == "Notify" and h.fields.get(HeaderFields.signature) == "susssasa{sv}i":
            next_id += 1
            app, replaces, icon, summary, body, actions, hints, expire = msg.body
            with open(record, "a") as f:
                f.write(json.dumps({
                    "id": next_id,
                    "sender": h.fields.get(HeaderFields.sender),
                    "app_name": app,
                    "replaces_id": replaces,
                    "app_icon": icon,
                    "summary": summary,
                    "body": body,
                    "actions": actions,
                    # A variant reads as (signature, value).
                    "hints": {k: {"signature": v[0], "value": v[1]} for k, v in hints.items()},
                    "expire_timeout": expire,
                }) + "\n")
            conn.send(new_method_return(msg, "u", (next_id,)))
        else:
            conn.send(new_error(msg, "org.freedesktop.DBus.Error.UnknownMethod"))


if __name__ == "__main__":
    sys.exit(main())
