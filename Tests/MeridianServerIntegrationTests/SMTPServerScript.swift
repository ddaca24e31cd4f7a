/// An SMTP server for the tests, in Python with `aiosmtpd` (independent of the server's Swift SMTP client), on
/// 127.0.0.1: prints `{"port": …}` as its first line, and writes each message it accepts as `NNN.json` in the folder
/// given as its argument — the envelope, the raw message (dot-stuffing undone by aiosmtpd), its headers and body as
/// Python's `email` package parses them, and any defects it found. `RCPT TO` a mailbox named `refuse@…` answers 550;
/// `flaky@…` 451 the first time, then 250; any other 250. It runs until SIGTERM.
let smtpServerScript = #"""
  import asyncio, email, email.policy, json, os, sys
  from aiosmtpd.smtp import SMTP

  directory = sys.argv[1]
  counts = {}
  received = 0

  class Handler:
      async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
          local = address.split("@")[0]
          counts[local] = counts.get(local, 0) + 1
          if local == "refuse":
              return "550 5.1.1 No such mailbox here"
          if local == "flaky" and counts[local] == 1:
              return "451 4.3.0 Try again later"
          envelope.rcpt_tos.append(address)
          return "250 OK"

      async def handle_DATA(self, server, session, envelope):
          global received
          received += 1
          message = email.message_from_bytes(envelope.original_content, policy=email.policy.default)
          entry = {
              "mailFrom": envelope.mail_from,
              "rcptTo": envelope.rcpt_tos,
              "raw": envelope.original_content.decode("utf-8", "replace"),
              "headers": {name: str(value) for name, value in message.items()},
              "contentType": message.get_content_type(),
              "charset": message.get_content_charset(),
              "body": message.get_content(),
              "defects": [repr(defect) for defect in message.defects],
          }
          path = os.path.join(directory, "%03d.json" % received)
          with open(path + ".part", "w") as file:
              json.dump(entry, file)
          os.rename(path + ".part", path)
          return "250 2.0.0 Accepted"

  async def main():
      loop = asyncio.get_running_loop()
      server = await loop.create_server(
          lambda: SMTP(Handler(), hostname="smtp.test", enable_SMTPUTF8=False), "127.0.0.1", 0)
      print(json.dumps({"port": server.sockets[0].getsockname()[1]}), flush=True)
      await server.serve_forever()

  asyncio.run(main())
  """#
