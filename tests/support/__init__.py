"""Pieces the tests share: the random input streams (random_streams.py) and the servers the deploy
tests start (deploy.py: a standalone cluster, a Spark Connect server)."""
