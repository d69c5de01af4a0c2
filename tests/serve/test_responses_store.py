"""Stored responses of `ingle serve` (SQLite): they outlive a restart, and two servers writing
one store at once (processes on one machine, as SQLite's WAL mode allows) lose nothing and
damage nothing."""

import concurrent.futures
import os
import re
import signal
import sqlite3
import subprocess
import time

import openai
import pytest

CHAT = "@local/smollm2-135m-instruct"


class Server:
    """`ingle serve` on a free loopback port, storing responses in `store`."""

    def __init__(self, store, log):
        self.log = open(log, "w+")
        self.process = subprocess.Popen(
            [os.environ["INGLE_SERVE_BIN"], "serve", "--port", "0", "--responses-store", str(store)],
            stderr=self.log, env={k: v for k, v in os.environ.items() if k != "INGLE_API_KEY"})
        for _ in range(200):
            self.log.seek(0)
            found = re.search(r"http://\S+/v1", self.log.read())
            if found:
                self.client = openai.OpenAI(base_url=found.group(0), api_key="none", max_retries=0)
                return
            assert self.process.poll() is None, open(log).read()
            time.sleep(0.05)
        raise AssertionError("ingle serve did not start")

    def stop(self):
        self.process.send_signal(signal.SIGTERM)
        assert self.process.wait(timeout=10) == 0
        self.log.close()


@pytest.fixture
def servers(tmp_path):
    started = []

    def start(store):
        server = Server(store, tmp_path / f"serve-{len(started)}.log")
        started.append(server)
        return server

    yield start
    for server in started:
        if server.process.poll() is None:
            server.process.kill()
            server.process.wait()


def test_stored_responses_outlive_a_restart(servers, tmp_path):
    store = tmp_path / "responses.sqlite3"
    first = servers(store)
    response = first.client.responses.create(model=CHAT, input="My name is Ada.", temperature=0,
                                             max_output_tokens=10)
    first.stop()
    second = servers(store)
    assert second.client.responses.retrieve(response.id).output_text == response.output_text
    items = second.client.responses.input_items.list(response.id)
    assert items.data[0].content[0].text == "My name is Ada."
    follow = second.client.responses.create(model=CHAT, input="What is my name?", temperature=0,
                                            max_output_tokens=10, previous_response_id=response.id)
    assert follow.usage.input_tokens >= response.usage.total_tokens
    second.client.responses.delete(response.id)
    with pytest.raises(openai.NotFoundError) as error:
        second.client.responses.create(model=CHAT, input="Hi", previous_response_id=response.id)
    assert error.value.body["param"] == "previous_response_id"


def test_two_servers_share_one_store(servers, tmp_path):
    store = tmp_path / "shared.sqlite3"
    one, two = servers(store), servers(store)

    def create(i):
        server = (one, two)[i % 2]
        return server.client.responses.create(model=CHAT, input=f"Say the number {i}.",
                                              max_output_tokens=3, metadata={"i": str(i)}).id

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        ids = list(pool.map(create, range(12)))
    # Each server reads what the other wrote, continues it, and deletes it.
    for i, id in enumerate(ids):
        other = (two, one)[i % 2]
        assert other.client.responses.retrieve(id).metadata == {"i": str(i)}
    continued = one.client.responses.create(model=CHAT, input="Again.", max_output_tokens=3,
                                            previous_response_id=ids[1])
    two.client.responses.delete(continued.id)
    with pytest.raises(openai.NotFoundError):
        one.client.responses.retrieve(continued.id)
    one.stop()
    two.stop()
    with sqlite3.connect(store) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert db.execute("SELECT COUNT(*) FROM responses").fetchone() == (12,)
