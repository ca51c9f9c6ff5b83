"""The optional embeddings: the off path, the error when asked for but absent, reciprocal-rank
fusion, and semantic ranking with the real static model from tokenlearn-static-model."""

from __future__ import annotations

from pathlib import Path

import pytest

from codeloop.index import embeddings
from codeloop.index.rank import RRF_K, fuse_semantic, prior, rank_files, with_embeddings
from codeloop.index.service import RepoIndex

needs_model = pytest.mark.skipif(
    not embeddings.available(),
    reason="the `embeddings` extra (model2vec, tokenlearn-static-model) is not installed")


def test_off_unless_the_setting_turns_it_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(embeddings.ENV_VAR, raising=False)
    assert not embeddings.enabled()
    monkeypatch.setenv(embeddings.ENV_VAR, "0")
    assert not embeddings.enabled()


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
    monkeypatch.delenv(embeddings.ENV_VAR, raising=False)
    index = RepoIndex(repo)
    index.update()
    ranked = rank_files(index, "apply a discount to the price", limit=200)
    assert with_embeddings(index, "apply a discount to the price", ranked, limit=2) == ranked[:2]
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
    index = RepoIndex(repo)
    index.update()
    text = "the discount is applied twice to the total price"
    ranked = rank_files(index, text, limit=200)
    fused = with_embeddings(index, text, ranked, limit=3)
    assert len(fused) == 3
    assert {p for p, _ in fused} <= set(index.paths())
    # Every file fused gets the semantic list's reciprocal rank on top of its own score.
    plain = dict(ranked)
    assert all(score > plain.get(path, 0.0) for path, score in fused)
    index.close()
