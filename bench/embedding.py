"""Benchmarks with semantic card ranking (recall.embed, the extra memdream[embed]) on a model the user has:
a built memory's recall.embed turned on for that model, and the model and the cards' vectors prepared as
`memdream dream` prepares them after a run (memdream.recall.embed.prepare). A model that cannot be had
stops the bench: a figure measured without it would say nothing of it."""

from __future__ import annotations

from pathlib import Path


def use_model(root: Path, model: str, min_similarity: float | None = None) -> None:
    from memdream import yamlio
    from memdream.memory.store import Memory
    from memdream.recall.embed import prepare

    config = yamlio.load_file(root / "memdream.yaml")
    section = {"enabled": True, "model": model}
    if min_similarity is not None:
        section["min_similarity"] = min_similarity
    config.setdefault("recall", {})["embed"] = section
    yamlio.dump_file(root / "memdream.yaml", config)
    prepared = prepare(Memory(root))
    if prepared is None or prepared.warning:
        raise SystemExit(f"{root.name}: {prepared.warning if prepared else 'recall.embed is off'}")
