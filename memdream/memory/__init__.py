"""The memory folder: cards, plan, settings, paths, YAML io, locking."""

from memdream.memory.card import Card, Evidence
from memdream.memory.locate import find_memory_root
from memdream.memory.plan import Plan, PlanItem
from memdream.memory.settings import Settings
from memdream.memory.store import CardFile, Memory

__all__ = ["Card", "CardFile", "Evidence", "Memory", "Plan", "PlanItem", "Settings", "find_memory_root"]
