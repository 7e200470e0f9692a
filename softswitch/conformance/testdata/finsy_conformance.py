"""finsy against the software switch: arbitration, pipeline push, gNMI
port discovery, table writes and reads, a default action, registers,
per-update errors, counters and a digest configuration. Exits non-zero on
the first wrong result; prints "ok" at the end.

Usage: finsy_conformance.py ADDR P4INFO BASE_PORT
"""
import asyncio
import ipaddress
import sys
from pathlib import Path

import finsy as fy

addr, p4info, base = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
LOCAL = int(ipaddress.IPv4Address("127.0.0.1"))


async def main():
    # The software switch takes no device config; finsy pushes a pipeline
    # only with one.
    opts = fy.SwitchOptions(p4info=p4info, p4blob=b"software switch", p4force=True)
    async with fy.Switch("sw", addr, opts) as sw:
        assert sw.is_primary, "not primary"
        names = sorted(p.name for p in sw.ports)
        assert names[0] == "coherence" and names[1] == "read-0", names
        assert all(p.up for p in sw.ports), [p for p in sw.ports]

        await sw.insert([
            fy.P4TableEntry("switch_address", match=fy.P4TableMatch(ipv4_dst=LOCAL, udp_dst_port=base),
                            action=fy.P4TableAction("serve_coherence")),
            fy.P4TableEntry("switch_address", match=fy.P4TableMatch(ipv4_dst=LOCAL, udp_dst_port=base + 1),
                            action=fy.P4TableAction("serve_reads", shard=0)),
            fy.P4TableEntry("cache_lookup", match=fy.P4TableMatch(key_digest=0x1234),
                            action=fy.P4TableAction("cached", slot=9)),
        ])
        await sw.modify([fy.P4TableEntry("identity", is_default_action=True,
                                         action=fy.P4TableAction("set_identity", node_id=7, map_version=3))])

        try:
            await sw.insert([fy.P4TableEntry("cache_lookup", match=fy.P4TableMatch(key_digest=0x1234),
                                             action=fy.P4TableAction("cached", slot=10))])
            raise AssertionError("a duplicate entry was accepted")
        except fy.P4ClientError as e:
            assert e.code == fy.GRPCStatusCode.UNKNOWN, e
            codes = [d.canonical_code for d in e.details.values()]
            assert codes == [fy.GRPCStatusCode.ALREADY_EXISTS], codes

        entries = [e async for e in sw.read(fy.P4TableEntry("switch_address"))]
        assert len(entries) == 2, entries
        [slot] = [e async for e in sw.read(fy.P4TableEntry("cache_lookup"))]
        assert slot.action.args["slot"] == 9, slot

        await sw.modify([fy.P4RegisterEntry("lease_until", index=0, data=123456)])
        [lease] = [r async for r in sw.read(fy.P4RegisterEntry("lease_until", index=0))]
        assert lease.data == 123456, lease

        cells = [c async for c in sw.read(fy.P4CounterEntry("cache_hits", index=9))]
        assert len(cells) == 1, cells

        await sw.insert([fy.P4DigestEntry("hot_key_t", max_list_size=1)])
    print("ok")


asyncio.run(main())
