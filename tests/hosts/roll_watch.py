"""What the fleet tests watch while a play rolls the fleet: which brokers are down at each moment, and the moment a
node has been restarted (to inject a fault right then).

A module of its own (not conftest): test files import helpers by module name."""

import threading


class UnitWatch:
    """Samples which brokers' units are not active, every half second, while a play runs."""

    def __init__(self, fleet):
        self.fleet, self.samples = fleet, []
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self):
        while not self.stopped.is_set():
            down = {entry["id"] for entry in self.fleet.broker_nodes if not self.fleet.unit_active(entry)}
            self.samples.append(down)
            self.stopped.wait(0.5)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc_info):
        self.stopped.set()
        self.thread.join(30)

    def most_down_at_once(self, besides=()):
        """The most brokers seen down in one sample, leaving out the ones a fault took down."""
        return max((len(down - set(besides)) for down in self.samples), default=0)


class OnRestart:
    """Runs ``action`` in a thread as soon as node ``node_id``'s unit has started a new main process (the play has
    restarted it); ``ran`` says whether it did. Leaving the block stops the watch."""

    def __init__(self, fleet, node_id, action):
        self.fleet, self.node_id, self.action = fleet, node_id, action
        self.before = fleet.main_process_started(node_id)
        self.stopped, self.ran = threading.Event(), False
        self.thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self):
        while not self.stopped.wait(0.2):
            if self.fleet.main_process_started(self.node_id) > self.before:
                self.action()
                self.ran = True
                return

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc_info):
        self.stopped.set()
        self.thread.join(120)  # the action may take its time (a network cut of 30 s)
