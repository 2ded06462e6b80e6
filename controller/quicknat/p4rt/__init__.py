"""A thin P4Runtime layer: P4Info lookups, entity builders and an asyncio client.

Protobuf modules come from finsy's bindings (built for current protobuf and its
fast upb backend) under P4Runtime's own short aliases: ``p4r`` for
p4.v1.p4runtime_pb2, ``p4i`` for p4.config.v1.p4info_pb2.
"""
