#!/usr/bin/python3
"""A real SMTP server on 127.0.0.1 for the email target's tests.

Run with Debian's python3 (package python3-aiosmtpd). Listens on a free
port of HOST (default 127.0.0.1), prints "port N" on stdout once it
accepts connections, and writes every mail it takes into DIR as
NNN.eml (the bytes as received) plus NNN.json (envelope sender and
recipients, the login used). Stops on SIGTERM.

Options shape the server for one test:
  --auth USER:PASS      require AUTH PLAIN/LOGIN with these (over plain
                        text: the tests run on loopback)
  --reject-rcpt ADDR    answer 550 to RCPT TO:<ADDR>
  --hang-after-data     take the whole mail, then never answer
"""
import argparse
import asyncio
import json
import os
import signal
import sys

from aiosmtpd.smtp import SMTP, AuthResult, LoginPassword


class Handler:
    def __init__(self, out, reject, hang):
        self.out, self.reject, self.hang, self.n = out, reject, hang, 0

    async def handle_RCPT(self, server, session, envelope, address, opts):
        if self.reject and address.lower() == self.reject.lower():
            return "550 5.1.1 no such mailbox"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        if self.hang:
            await asyncio.sleep(3600)
        self.n += 1
        base = os.path.join(self.out, "%03d" % self.n)
        with open(base + ".eml.tmp", "wb") as f:
            f.write(envelope.original_content)
        meta = {"from": envelope.mail_from, "to": envelope.rcpt_tos,
                "login": session.auth_data.login.decode()
                if isinstance(session.auth_data, LoginPassword) else None}
        with open(base + ".json", "w") as f:
            json.dump(meta, f)
        os.rename(base + ".eml.tmp", base + ".eml")
        return "250 2.0.0 queued"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--auth")
    ap.add_argument("--reject-rcpt")
    ap.add_argument("--hang-after-data", action="store_true")
    a = ap.parse_args()
    handler = Handler(a.dir, a.reject_rcpt, a.hang_after_data)
    kw = {}
    if a.auth:
        user, pw = a.auth.split(":", 1)

        def check(server, session, envelope, mechanism, data):
            ok = (isinstance(data, LoginPassword) and
                  data.login.decode() == user and
                  data.password.decode() == pw)
            return AuthResult(success=ok, auth_data=data)

        kw = dict(authenticator=check, auth_required=True,
                  auth_require_tls=False)

    loop = asyncio.new_event_loop()
    srv = loop.run_until_complete(loop.create_server(
        lambda: SMTP(handler, hostname="fake.smtp.test", **kw),
        a.host, 0))
    loop.add_signal_handler(signal.SIGTERM, loop.stop)
    print("port %d" % srv.sockets[0].getsockname()[1], flush=True)
    loop.run_forever()
    srv.close()


if __name__ == "__main__":
    sys.exit(main())
