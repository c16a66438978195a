"""Mail protocols shared by the Awareness email adapter and the email channel.

`imap_session` opens logged-in IMAP connections, `mailbox_watch` follows one mailbox in IDLE,
`message` reads a fetched message leniently, `smtp_send` submits one. Each blocks: callers run
them in worker threads.
"""
