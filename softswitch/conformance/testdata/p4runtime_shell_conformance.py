"""p4runtime-shell against the software switch: arbitration, pipeline push,
table writes (entries and a default action), per-update errors, reads,
counters and a digest configuration. Exits non-zero on the first wrong
result; prints "ok" at the end.

Usage: p4runtime_shell_conformance.py ADDR P4INFO DEVICE_CONFIG BASE_PORT
"""
import sys

import p4runtime_sh.shell as sh
from p4runtime_sh.p4runtime import P4RuntimeWriteException

addr, p4info, device_config, base = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])

sh.setup(device_id=1, grpc_addr=addr, election_id=(0, 1),
         config=sh.FwdPipeConfig(p4info, device_config), verbose=False)
try:
    reads = sh.TableEntry("switch_address")(action="serve_reads")
    reads.match["ipv4_dst"] = "127.0.0.1"
    reads.match["udp_dst_port"] = str(base + 1)
    reads.action["shard"] = "0"
    reads.insert()

    coherence = sh.TableEntry("switch_address")(action="serve_coherence")
    coherence.match["ipv4_dst"] = "127.0.0.1"
    coherence.match["udp_dst_port"] = str(base)
    coherence.insert()

    try:
        reads.insert()
        raise AssertionError("a duplicate entry was accepted")
    except P4RuntimeWriteException as e:
        assert "ALREADY_EXISTS" in str(e), e

    route = sh.TableEntry("storage_route")(action="to_shim")
    route.match["shard"] = "0"
    route.action["addr"] = "127.0.0.1"
    route.action["port"] = "6390"
    route.insert()

    identity = sh.TableEntry("identity")(is_default=True)
    identity.action = sh.Action("set_identity")
    identity.action["node_id"] = "7"
    identity.action["map_version"] = "3"
    identity.modify()

    entries = list(sh.TableEntry("switch_address").read())
    assert len(entries) == 2, entries
    routes = list(sh.TableEntry("storage_route").read())
    assert len(routes) == 1 and routes[0].action["port"].value == b"\x18\xf6", routes

    cells = list(sh.CounterEntry("datagrams").read())
    assert len(cells) == 256, len(cells)

    digest = sh.DigestEntry("hot_key_t")
    digest.max_list_size = 1
    digest.insert()
finally:
    sh.teardown()
print("ok")
