"""A fleet of test hosts as our users run Kafka: containers with systemd as PID 1 and sshd, Apache Kafka installed
in the Apache layout (``/opt/kafka/libs``, ``/etc/kafka/server.properties``) and run by a real ``kafka.service``.

``python -m kafka_testbed hosts up --dir D`` starts one and writes ``D/inventory.yml`` (SSH, become) and
``D/cluster.json``; ``hosts down --dir D`` removes it. The image is built from Debian packages (no registry is
needed) and cached; the Docker daemon is started when none runs and stopped by whoever started it.
"""
