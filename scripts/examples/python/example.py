#!/usr/bin/env python3
"""Drives claude-rpc with the Python standard library only, as pi 1.5.2's
docs (docs/rpc.md) tell a host to: a prompt whose reply streams to the
terminal, a steering message sent while it streams, then a prompt that is
aborted.

    CLAUDE_RPC_BIN=claude-rpc python3 example.py [first prompt] [steer] [prompt to abort]

Extra claude-rpc flags go in CLAUDE_RPC_ARGS (space-separated). Commands go
to claude-rpc's stdin as JSON lines; responses (with the command's id) and
events come back on its stdout, one JSON object a line. As pi's docs say:
stdout is read as bytes and split on LF only (a text-mode reader may split
on U+2028 inside a string); agent_end ends one low-level run, but steering,
follow-ups and retries can follow it: agent_settled says nothing more will
happen without a command.
"""
import itertools
import json
import os
import queue
import subprocess
import sys
import threading

args = sys.argv[1:] + [None] * 3
first = args[0] or "List three uses of a paperclip, slowly."
steer = args[1] or "Make the last one funny."
to_abort = args[2] or "Write a long essay about paperclips."

# --message-updates delta: message_update frames as pi 1.5 writes them (the
# delta, not the message so far).
proc = subprocess.Popen(
    [os.environ.get("CLAUDE_RPC_BIN", "claude-rpc"), "--mode", "rpc", "--message-updates", "delta"]
    + os.environ.get("CLAUDE_RPC_ARGS", "").split(),
    stdin=subprocess.PIPE, stdout=subprocess.PIPE)

events = queue.Queue()      # every frame that is not an answer
answers = {}                # id -> queue for its response
ids = itertools.count(1)


def read_stdout():
    for line in proc.stdout:  # bytes, split on LF only
        frame = json.loads(line)
        if frame.get("type") == "response" and frame.get("id") in answers:
            answers[frame["id"]].put(frame)
        else:
            events.put(frame)
    events.put(None)  # claude-rpc exited


threading.Thread(target=read_stdout, daemon=True).start()


def call(command, **fields):
    """Sends a command and returns its response (raising on success:false)."""
    cid = f"py-{next(ids)}"
    answers[cid] = waiting = queue.Queue()  # registered before the command goes out
    proc.stdin.write(json.dumps({"id": cid, "type": command, **fields}).encode("utf-8") + b"\n")
    proc.stdin.flush()
    resp = waiting.get(timeout=120)
    del answers[cid]
    if not resp["success"]:
        raise RuntimeError(f"{command}: {resp['error']}")
    return resp.get("data")


def stream_until(stop, on_text=None):
    """Prints streamed text and user messages until stop(frame) is true."""
    while True:
        frame = events.get(timeout=120)
        if frame is None:
            raise RuntimeError("claude-rpc exited")
        kind = frame["type"]
        if kind == "message_update" and frame["assistantMessageEvent"]["type"] == "text_delta":
            print(frame["assistantMessageEvent"]["delta"], end="", flush=True)
            if on_text:
                on_text()
        elif kind == "message_start" and frame["message"]["role"] == "user":
            text = "".join(c.get("text", "") for c in frame["message"]["content"])
            print(f"\n[user] {text}", flush=True)
        elif kind == "message_end" and frame["message"]["role"] == "assistant" and frame["message"]["stopReason"] != "toolUse":
            print(f"\n[assistant done: {frame['message']['stopReason']}]", flush=True)
        elif kind == "agent_settled":
            print("[settled: aborted]" if frame["aborted"] else "[settled]", flush=True)
        if stop(frame):
            return frame


# 1. A prompt; the first text delta triggers a steering message, which is
#    queued ({"disposition": "queued"}) and answered within the same run.
call("prompt", message=first)
steered = []
stream_until(lambda f: f["type"] == "agent_settled",
             on_text=lambda: steered or steered.append(call("steer", message=steer)))

# 2. A prompt aborted as soon as it streams. abort is answered after
#    agent_settled {"aborted": true}: its frames are already queued here.
call("prompt", message=to_abort)
stream_until(lambda f: f["type"] == "message_update")
call("abort")
stream_until(lambda f: f["type"] == "agent_settled")

state = call("get_state")
print(f"\n[state] session {state['sessionId']}, {state['messageCount']} messages, model {state['model']['id']}")
proc.stdin.close()
sys.exit(proc.wait(timeout=30))
