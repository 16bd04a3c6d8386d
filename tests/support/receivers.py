"""Local receivers of alert notifications, started by the tests: an HTTP
server recording webhook POSTs and an SMTP server (aiosmtpd) recording mail.
Both listen on 127.0.0.1 at a free port."""

from __future__ import annotations

import socket
import threading
from email import message_from_bytes
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from aiosmtpd.controller import Controller


class WebhookReceiver:
    """Records each POST (headers, body); answers the queued status codes, then 200."""

    def __init__(self, failures: int = 0):
        self.requests: list[dict] = []
        self.failures = failures
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                receiver.requests.append(
                    {"headers": dict(self.headers), "body": body, "path": self.path}
                )
                failing = receiver.failures > 0
                receiver.failures -= 1
                self.send_response(500 if failing else 200)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class MailReceiver:
    """An SMTP server keeping every message it accepts."""

    def __init__(self):
        self.messages = []
        receiver = self

        class Handler:
            async def handle_DATA(self, server, session, envelope):
                message = message_from_bytes(envelope.original_content)
                receiver.messages.append(
                    {"from": envelope.mail_from, "to": list(envelope.rcpt_tos), "message": message}
                )
                return "250 OK"

        self.port = _free_port()
        self.controller = Controller(Handler(), hostname="127.0.0.1", port=self.port)
        self.controller.start()

    def close(self):
        self.controller.stop()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def webhook_receiver():
    receivers = []

    def start(failures: int = 0) -> WebhookReceiver:
        receivers.append(WebhookReceiver(failures))
        return receivers[-1]

    yield start
    for receiver in receivers:
        receiver.close()


@pytest.fixture
def mail_receiver():
    receiver = MailReceiver()
    yield receiver
    receiver.close()
