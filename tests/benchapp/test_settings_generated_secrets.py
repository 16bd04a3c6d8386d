"""Keys generated on a first run: processes starting together share one whole key."""

import threading

from benchapp.settings_secrets import generated_secret


def test_two_first_starts_at_once_read_one_whole_key(tmp_path):
    # `make run` starts collectstatic and migrate together on a fresh var/;
    # the first one was still writing its key when the second one read it.
    path = tmp_path / "benchboard_fernet_keys"
    making, release = threading.Event(), threading.Event()
    got = {}

    def slow_make():
        making.set()
        release.wait(10)
        return "key-of-the-slow-start"

    slow = threading.Thread(target=lambda: got.update(slow=generated_secret(path, slow_make)))
    slow.start()
    assert making.wait(10)
    got["fast"] = generated_secret(path, lambda: "key-of-the-fast-start")
    release.set()
    slow.join(10)

    assert got == {"fast": "key-of-the-fast-start", "slow": "key-of-the-fast-start"}
    assert path.stat().st_mode & 0o777 == 0o600
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no file of its own left


def test_a_key_once_written_is_read_back_not_made_again(tmp_path):
    path = tmp_path / "django_secret_key"
    first = generated_secret(path, lambda: "first")
    assert first == "first"
    assert generated_secret(path, lambda: "second") == "first"
