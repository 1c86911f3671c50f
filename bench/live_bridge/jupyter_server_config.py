"""Stamps for bench/live_bridge_hops.py: jupyter_server's kernel websocket, hop by hop.

Loaded only from the private config dir of the benchmark's server. It wraps the websocket
connection's two handlers and appends `kind id epoch_ms size` lines to $DIAG_LOG for messages
carrying a bridge request_id or reply_to; DIAG_NODELAY=1 also sets TCP_NODELAY on the socket.
"""

import os
import re
import time

from jupyter_server.services.kernels.connection.channels import ZMQChannelsWebsocketConnection as Connection
from jupyter_server.services.kernels.websocket import KernelWebsocketHandler as Handler

LOG = os.environ["DIAG_LOG"]
ID = re.compile(rb'"(request_id|reply_to)": ?"([0-9a-f]{32})"')


def _stamp(kind, data):
    m = ID.search(data.encode() if isinstance(data, str) else data)
    if m:
        with open(LOG, "a") as f:
            f.write(f"{kind} {m.group(1).decode()}:{m.group(2).decode()} {time.time() * 1000:.3f} {len(data)}\n")


_incoming, _outgoing, _open = Connection.handle_incoming_message, Connection.handle_outgoing_message, Handler.open


def handle_incoming_message(self, incoming_msg):
    _stamp("S_ws_in", incoming_msg)
    _incoming(self, incoming_msg)
    _stamp("S_zmq_out", incoming_msg)


def handle_outgoing_message(self, stream, outgoing_msg):
    data = b"".join(bytes(p) for p in outgoing_msg[-3:])
    _stamp("S_zmq_in", data)
    _outgoing(self, stream, outgoing_msg)
    _stamp("S_ws_out", data)


async def open_(self, kernel_id):
    if os.environ.get("DIAG_NODELAY") == "1":
        self.set_nodelay(True)
    return await _open(self, kernel_id)


Connection.handle_incoming_message = handle_incoming_message
Connection.handle_outgoing_message = handle_outgoing_message
Handler.open = open_
