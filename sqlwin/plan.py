"""Kept for checkpoints written before sqlwin 0.1's layout: their snapshots name the window types
as sqlwin.plan.Tumble etc. The types live in sqlwin.ir; the plan in sqlwin.sql.plan."""

from sqlwin.ir import *  # noqa: F401,F403
