"""The optional embeddings: the off path, the error when asked for but absent, reciprocal-rank
fusion, and semantic ranking with the real static model from tokenlearn-static-model."""

from __future__ import annotations

from pathlib import Path

import pytest

from codeloop.index import embeddings
from codeloop.index.rank import RRF_K, fuse_semantic, prior, rank_files, semantic_files
from codeloop.index.service import RepoIndex

needs_model = pytest.mark.skipif(
    not embeddings.available(),
    reason="the `embeddings` extra (model2vec, tokenlearn-static-model) is not installed")


def test_on_when_installed_unless_the_setting_turns_it_off(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(embeddings.ENV_VAR, raising=False)
    assert embeddings.enabled() == embeddings.available()
    monkeypatch.setenv(embeddings.ENV_VAR, "0")
    assert not embeddings.enabled()
    monkeypatch.setattr(embeddings, "_MODULES", ("codeloop_no_such_module_xyz",))
    monkeypatch.delenv(embeddings.ENV_VAR)
    assert not embeddings.enabled()  # not installed: off, without an error


def test_only_a_setting_that_names_them_asks_for_them(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embeddings, "available", lambda: True)
    monkeypatch.delenv(embeddings.ENV_VAR, raising=False)
    assert embeddings.enabled() and not embeddings.asked_for()  # installed is not asked
    for setting, asked in (("1", True), ("on", True), ("0", False), ("off", False)):
        monkeypatch.setenv(embeddings.ENV_VAR, setting)
        assert embeddings.asked_for() is asked


def test_asking_for_missing_packages_says_how_to_install(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # A module name that cannot exist stands for an environment without the extra.
    monkeypatch.setattr(embeddings, "_MODULES", ("codeloop_no_such_module_xyz",))
    monkeypatch.setenv(embeddings.ENV_VAR, "1")
    assert not embeddings.available()
    with pytest.raises(embeddings.EmbeddingsUnavailable) as err:
        embeddings.enabled()
    assert "codeloop[embeddings]" in str(err.value)


def test_fusion_adds_reciprocal_rank_with_priors() -> None:
    ranked = [("src/a.py", 0.30), ("src/b.py", 0.17), ("src/c.py", 0.15)]
    fused = dict(fuse_semantic(ranked, ["src/c.py", "tests/test_c.py"], limit=10))
    assert fused["src/c.py"] == pytest.approx(0.15 + 1.0 / (RRF_K + 1))
    assert fused["src/a.py"] == 0.30
    assert fused["tests/test_c.py"] == pytest.approx(prior("tests/test_c.py") / (RRF_K + 2))
    order = [p for p, _ in fuse_semantic(ranked, ["src/c.py"], limit=2)]
    assert order == ["src/a.py", "src/c.py"]


def test_fusion_is_skipped_when_off(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(embeddings.ENV_VAR, "off")

    def not_asked(*args: object) -> None:
        raise AssertionError("off, yet the embeddings were asked for a ranking")

    monkeypatch.setattr(embeddings, "rank_files_semantic_ready", not_asked)
    index = RepoIndex(repo)
    index.update()
    assert semantic_files(index, "apply a discount to the price") is None
    index.close()


@needs_model
def test_semantic_ranking_follows_edits(repo: Path) -> None:
    (repo / "shop" / "mail.py").write_text(
        "import smtplib\n\n\n"
        "def send_receipt(address, body):\n"
        "    \"\"\"Email the customer a receipt after checkout.\"\"\"\n"
        "    with smtplib.SMTP('localhost') as server:\n"
        "        server.sendmail('shop@example.com', [address], body)\n")
    index = RepoIndex(repo)
    index.update()
    top = [p for p, _ in
           embeddings.rank_files_semantic(index, "send an email receipt to the customer", 10)]
    # A 64-dimension static model is coarse: it need only prefer the mailing code to the
    # unrelated pricing code and the prose.
    assert top.index("shop/mail.py") < top.index("shop/pricing.py")
    assert top.index("shop/mail.py") < top.index("README.md")
    assert set(top) <= set(index.paths())

    (repo / "shop" / "mail.py").unlink()
    index.update()
    after = embeddings.rank_files_semantic(index, "send an email receipt to the customer", 10)
    assert "shop/mail.py" not in {p for p, _ in after}
    assert after  # the remaining files are still ranked
    index.close()


@needs_model
def test_fused_ranking_when_on(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(embeddings.ENV_VAR, "1")
    monkeypatch.setattr(embeddings, "_BACKGROUND_NICE", 0)
    index = RepoIndex(repo)
    index.update()
    text = "the discount is applied twice to the total price"
    assert semantic_files(index, text) is None  # not embedded yet: a thread does it
    assert embeddings.wait_until_built(index, 60)
    semantic = semantic_files(index, text)
    assert semantic is not None and set(semantic) <= set(index.paths())
    ranked = rank_files(index, text, limit=200)
    fused = fuse_semantic(ranked, semantic, limit=3)
    assert len(fused) == 3
    assert {p for p, _ in fused} <= set(index.paths())
    # Every file fused gets the semantic list's reciprocal rank on top of its own score.
    plain = dict(ranked)
    assert all(score > plain.get(path, 0.0) for path, score in fused)
    index.close()


@needs_model
def test_vectors_are_kept_with_the_index_so_a_restart_embeds_only_changes(
        repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    embedded: list[int] = []
    real_encode = embeddings.encode

    def counting(texts: list[str]):  # type: ignore[no-untyped-def]
        embedded.append(len(texts))
        return real_encode(texts)

    monkeypatch.setattr(embeddings, "encode", counting)
    text = "the discount is applied twice to the total price"
    index = RepoIndex(repo)
    index.update()
    first = embeddings.rank_files_semantic(index, text, 10)
    index.close()
    assert (index.dir / embeddings.VECTORS_FILE).is_file()
    assert embedded[0] > 3 and embedded[1:] == [1]  # every chunk, then the query
    embedded.clear()
    # A new process (a new index object): the saved vectors serve, only the query is encoded.
    restarted = RepoIndex(repo)
    restarted.update()
    assert embeddings.rank_files_semantic(restarted, text, 10) == first
    assert embedded == [1]
    embedded.clear()
    # One file changes: only its one chunk is embedded again.
    (repo / "shop" / "cart.py").write_text("def checkout(cart):\n    return cart.total()\n")
    restarted.update()
    embeddings.rank_files_semantic(restarted, text, 10)
    assert embedded == [1, 1]
    restarted.close()


@needs_model
def test_a_views_vectors_are_kept_with_its_repository(repo: Path) -> None:
    import shutil

    from codeloop.index.registry import discard_index, open_index
    view = repo.parent / "view"
    shutil.copytree(repo, view)
    seed = RepoIndex(repo)
    seed.update()
    seed.close()
    index = open_index(view, seed=repo)
    embeddings.rank_files_semantic(index, "apply a discount", 5)
    discard_index(view)  # the session is over: its view's index goes
    assert (seed.dir / embeddings.VECTORS_FILE).is_file()
    assert len(embeddings.load_vectors(seed.dir / embeddings.VECTORS_FILE)) >= 3


@needs_model
def test_a_file_gone_from_disk_since_it_was_indexed_is_left_out_not_a_crash(
        repo: Path) -> None:
    # Seen in a SWE-bench run: the checkout moved on while the index still listed a file; its
    # chunks could not be read, so nothing was embedded for it, and the first context died
    # with a KeyError on the index's thread.
    index = RepoIndex(repo)
    index.update()
    assert embeddings.rank_files_semantic(index, "apply a discount", 10)  # vectors kept
    pricing = repo / "shop" / "pricing.py"
    pricing.write_text("def discounted(price, rate):\n    return price * (1 - rate)\n")
    index.update()  # a new version to embed, and nothing else
    pricing.unlink()  # gone before it is embedded; no update: the index still lists it
    again = RepoIndex(repo)  # a fresh process's view: the matrix is made anew
    ranked = embeddings.rank_files_semantic(again, "apply a discount to the price", 10)
    assert ranked and "shop/pricing.py" not in {p for p, _ in ranked}
    again.close()
    index.close()
