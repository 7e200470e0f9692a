# Included by the Makefile: the targets that install what the tests need
# (TEST_DEPS), each idempotent, and apt_install, which they share.

# Installs the Debian packages redis-server and redis-tools (redis-benchmark,
# redis-cli) unless both binaries are already on PATH. The tests start their
# own servers: the system's redis service is never started (apt_install).
.PHONY: redis-server
redis-server:
	@$(call apt_install,redis-server redis-benchmark,redis-server redis-tools)

# Installs the Debian package nutcracker (twemproxy) unless it is on PATH:
# the sharding Redis proxy the gateway is measured against
# (workload/twemproxy, make bench-gateway, make demo).
.PHONY: nutcracker
nutcracker:
	@$(call apt_install,nutcracker,nutcracker)

# Installs the Debian package iptables unless iptables-legacy is on PATH. The
# fault-injection suite delays packets by queueing them to userspace with the
# xtables NFQUEUE target of legacy iptables (the kernels it runs on have no
# netem qdisc and no nftables queue expression).
.PHONY: iptables
iptables:
	@$(call apt_install,iptables-legacy,iptables)

# Installs the Debian package shellcheck unless it is on PATH, for the test
# that checks every shell script (test/scripts).
.PHONY: shellcheck
shellcheck:
	@$(call apt_install,shellcheck,shellcheck)

# Installs the Debian package tcl unless tclsh is on PATH, and dpkg-dev
# unless dpkg-source is: Redis's own test suite is Tcl, and dpkg-source
# unpacks Debian's redis source package that holds it (make redis-compat,
# test/rediscompat).
.PHONY: tclsh dpkg-dev
tclsh:
	@$(call apt_install,tclsh,tcl)
dpkg-dev:
	@$(call apt_install,dpkg-source,dpkg-dev)

# Installs the Debian packages spin and gcc unless both are on PATH, for
# the model check of direct writes (dataplane/heldkeys/testdata).
.PHONY: spin
spin:
	@$(call apt_install,spin gcc,spin gcc)

# Installs the Debian package prometheus (prometheus and promtool) unless
# both are on PATH, for the tests of the metrics, the alert rules and the
# dashboards' queries; its system service is never started (apt_install).
.PHONY: prometheus
prometheus:
	@$(call apt_install,prometheus promtool,prometheus)

# Creates the redis-py virtualenv unless it is there (python3 and its venv
# module from Debian if missing).
.PHONY: redis-py
redis-py: $(REDIS_PY_DIR)/bin/python
$(REDIS_PY_DIR)/bin/python:
	@python3 -c 'import ensurepip, venv' 2>/dev/null || ( $(call apt_install,python3-with-venv,python3 python3-venv) )
	rm -rf '$(REDIS_PY_DIR)'
	python3 -m venv '$(REDIS_PY_DIR)'
	'$(REDIS_PY_DIR)/bin/pip' install --quiet --disable-pip-version-check 'redis==$(REDIS_PY_VERSION)'

# Create the finsy and p4runtime-shell virtualenvs unless they are there
# (keyed by version: a change of their requirements goes with a new version).
.PHONY: finsy p4runtime-shell
finsy: $(FINSY_DIR)/bin/python
$(FINSY_DIR)/bin/python:
	@python3 -c 'import ensurepip, venv' 2>/dev/null || ( $(call apt_install,python3-with-venv,python3 python3-venv) )
	rm -rf '$(FINSY_DIR)'
	python3 -m venv '$(FINSY_DIR)'
	'$(FINSY_DIR)/bin/pip' install --quiet --disable-pip-version-check -r softswitch/conformance/testdata/finsy-requirements.txt
p4runtime-shell: $(P4RUNTIME_SH_DIR)/bin/python
$(P4RUNTIME_SH_DIR)/bin/python:
	@python3 -c 'import ensurepip, venv' 2>/dev/null || ( $(call apt_install,python3-with-venv,python3 python3-venv) )
	rm -rf '$(P4RUNTIME_SH_DIR)'
	python3 -m venv '$(P4RUNTIME_SH_DIR)'
	'$(P4RUNTIME_SH_DIR)/bin/pip' install --quiet --disable-pip-version-check -r softswitch/conformance/testdata/p4runtime-shell-requirements.txt

# Downloads ONOS's REST spec unless it is there: the onos-rest jar from
# Maven Central, checked against ONOS_REST_SHA256, and its
# WEB-INF/classes/apidoc/swagger.json (unzip from Debian if missing).
.PHONY: onos-rest
onos-rest: $(ONOS_REST_DIR)/swagger.json
$(ONOS_REST_DIR)/swagger.json:
	@$(call apt_install,unzip curl,unzip curl)
	mkdir -p '$(ONOS_REST_DIR)'
	curl -sSfL -o '$(ONOS_REST_DIR)/onos-rest.jar.tmp' \
		'https://repo1.maven.org/maven2/org/onosproject/onos-rest/$(ONOS_VERSION)/onos-rest-$(ONOS_VERSION).jar'
	echo '$(ONOS_REST_SHA256)  $(ONOS_REST_DIR)/onos-rest.jar.tmp' | sha256sum -c --quiet
	unzip -p '$(ONOS_REST_DIR)/onos-rest.jar.tmp' WEB-INF/classes/apidoc/swagger.json > '$(ONOS_REST_DIR)/swagger.json.tmp'
	rm '$(ONOS_REST_DIR)/onos-rest.jar.tmp'
	mv '$(ONOS_REST_DIR)/swagger.json.tmp' '$@'

# Builds the ONOS codec harness unless it is built from its current
# sources (Java 17 and Maven from Debian if missing): the jar and the class
# path of it and its dependencies.
.PHONY: onos-codecs
onos-codecs: $(ONOS_CODECS_DIR)/classpath
$(ONOS_CODECS_DIR)/classpath:
	@$(call apt_install,java javac,openjdk-17-jdk-headless)
	@$(call apt_install,mvn,maven)
	mkdir -p '$(ONOS_CODECS_DIR)' '$(MAVEN_REPO)'
	mvn -q -B -Dstyle.color=never -f fabric/onos/onoscodecs/pom.xml -Dmaven.repo.local='$(MAVEN_REPO)' -Dout='$(ONOS_CODECS_DIR)/build' \
		-Dmdep.outputFile='$(ONOS_CODECS_DIR)/dependencies' clean package dependency:build-classpath
	printf '%s:%s\n' '$(ONOS_CODECS_DIR)/build/onoscodecs-$(ONOS_VERSION).jar' "$$(cat '$(ONOS_CODECS_DIR)/dependencies')" > '$@.tmp'
	mv '$@.tmp' '$@'

# Builds the Jedis cluster check unless it is built from its current
# sources and JEDIS_VERSION (as onos-codecs): its jar and class path.
.PHONY: jedis-cluster
jedis-cluster: $(JEDIS_DIR)/classpath
$(JEDIS_DIR)/classpath:
	@$(call apt_install,java javac,openjdk-17-jdk-headless)
	@$(call apt_install,mvn,maven)
	mkdir -p '$(JEDIS_DIR)' '$(MAVEN_REPO)'
	mvn -q -B -Dstyle.color=never -f gateway/jediscluster/pom.xml -Dmaven.repo.local='$(MAVEN_REPO)' -Djedis.version='$(JEDIS_VERSION)' \
		-Dout='$(JEDIS_DIR)/build' -Dmdep.outputFile='$(JEDIS_DIR)/dependencies' clean package dependency:build-classpath
	printf '%s:%s\n' '$(JEDIS_DIR)/build/jediscluster-1.jar' "$$(cat '$(JEDIS_DIR)/dependencies')" > '$@.tmp'
	mv '$@.tmp' '$@'

# Builds upstream Prometheus into PROMETHEUS_DIR unless it is there (once
# per version).
.PHONY: prometheus-kubernetes
prometheus-kubernetes: $(PROMETHEUS_DIR)/prometheus
$(PROMETHEUS_DIR)/prometheus:
	@echo 'Building Prometheus $(PROMETHEUS_VERSION) (with Kubernetes service discovery) into $(PROMETHEUS_DIR)'
	mkdir -p '$(PROMETHEUS_DIR)'
	GOBIN='$(PROMETHEUS_DIR)' $(GO) install -tags '$(PROMETHEUS_TAGS)' -ldflags '-X github.com/prometheus/common/version.Version=$(PROMETHEUS_VERSION)' \
		github.com/prometheus/prometheus/cmd/prometheus@$(PROMETHEUS_VERSION)

# apt_install COMMANDS,PACKAGES installs the Debian PACKAGES (without their
# recommendations) unless every one of COMMANDS is on PATH: it waits up to
# 10 minutes for another apt-get to release the dpkg lock, and runs apt-get
# update only if the install fails. No package's service is started: while
# apt-get runs, a policy-rc.d that forbids service starts is in place (a
# temporary one unless the system has its own).
define apt_install
missing=; for c in $(1); do command -v $$c >/dev/null || missing=1; done; \
if [ -z "$$missing" ]; then exit 0; fi; \
if ! command -v apt-get >/dev/null; then \
	echo '$(2): $(1) not on PATH and no apt-get; install $(2) by hand' >&2; \
	exit 1; \
fi; \
sudo=; \
if [ "$$(id -u)" -ne 0 ] && command -v sudo >/dev/null; then sudo=sudo; fi; \
policy=/usr/sbin/policy-rc.d; \
if [ ! -e "$$policy" ]; then \
	trap '$$sudo rm -f "$$policy"' EXIT; \
	printf '#!/bin/sh\nexit 101\n' | $$sudo tee "$$policy" >/dev/null; \
	$$sudo chmod 755 "$$policy"; \
fi; \
apt=($$sudo env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600); \
echo 'Installing $(2) with apt-get'; \
"$${apt[@]}" install -y --no-install-recommends $(2) \
	|| { "$${apt[@]}" update && "$${apt[@]}" install -y --no-install-recommends $(2); }
endef
