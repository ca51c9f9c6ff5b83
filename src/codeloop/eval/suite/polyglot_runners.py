"""How each polyglot track's tests run in the sandbox, offline, and which parser reads them.

Go, Rust, C++ and Java use Debian's toolchains (system directories the sandbox shows).
JavaScript needs jest, babel and a JUnit reporter, which `benchmarks/polyglot_setup.sh`
installs once into a toolchains directory; the task binds that directory read-only into the
sandbox. Java compiles with javac and runs JUnit's console launcher (Debian's junit5):
gradle would fetch the exercises' dependencies at run time.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path

from codeloop.eval.suite.tasks import SuiteError, TaskToolchain
from codeloop.index.store import cache_root
from codeloop.sandbox.environment import BASE_PATH

q = shlex.quote

# Debian's jars (junit5, libassertj-core-java, libandroid-json-java): the exercises' build
# files ask for JUnit Jupiter and AssertJ, and rest-api for org.json.
JAVA_LIBS = "/usr/share/java"
_JAVA_CLASSPATH = ("junit-jupiter-api", "junit-jupiter-params", "opentest4j", "apiguardian-api",
                   "assertj-core", "byte-buddy", "com.android.json")
_JAVA_LAUNCHER = "junit-platform-console-standalone"  # its manifest names the engines
# Libraries an exercise's build.gradle may name that the class path above provides.
JAVA_PROVIDED = ("org.json:json",)
# Small heap and reserved areas: the sandbox limits address space (4 GB for the verifier),
# and a JVM sizes its heap reservation from the machine's memory.
_JVM = ("-Xmx768m", "-XX:ReservedCodeCacheSize=64m", "-XX:CompressedClassSpaceSize=128m",
        "-XX:+UseSerialGC")


def default_toolchains() -> Path:
    """`$CODELOOP_POLYGLOT_TOOLCHAINS`, else `<cache>/polyglot-toolchains` (the codeloop cache:
    `$CODELOOP_CACHE_DIR`, `$XDG_CACHE_HOME/codeloop` or `~/.cache/codeloop`)."""
    explicit = os.environ.get("CODELOOP_POLYGLOT_TOOLCHAINS")
    return Path(explicit) if explicit else cache_root() / "polyglot-toolchains"


@dataclass(frozen=True)
class Language:
    """One track: the tools it needs, its parser and the report file its runner writes."""

    name: str
    tools: tuple[str, ...]  # what must be on PATH for the track to run at all
    parser: str
    report: str = ""

    def command(self, slug: str, toolchains: Path) -> str:
        if self.name == "python":
            module = slug.replace("-", "_") + "_test"
            return f"python3 -B -m unittest -v {q(module)}"
        if self.name == "go":
            return "GOCACHE=/tmp/go-cache GOPATH=/tmp/go GOFLAGS=-mod=mod go test -json ./..."
        if self.name == "rust":
            return ("CARGO_HOME=/tmp/cargo CARGO_TARGET_DIR=/tmp/target "
                    "cargo test --offline -- --include-ignored")
        if self.name == "cpp":
            # CMakeLists names the program after its directory: build from a copy so named.
            src, build = f"/tmp/src/{q(slug)}", "/tmp/build"
            return (f"mkdir -p /tmp/src && cp -r . {src} && "
                    f"cmake -S {src} -B {build} -DEXERCISM_RUN_ALL_TESTS=1 >/dev/null && "
                    f"cmake --build {build} -j 2 >/dev/null && "
                    f"{build}/{q(slug)} -r junit -o {self.report}")
        if self.name == "javascript":
            return _jest_command(toolchains / "javascript")
        if self.name == "java":
            return _java_command(self.report)
        raise SuiteError(f"no test command for the {self.name} track", "")

    def toolchain(self, toolchains: Path) -> TaskToolchain:
        """What the track's commands need beyond the system directories."""
        if self.name != "javascript":
            return TaskToolchain()
        js = toolchains / "javascript"
        # jest-junit: the report in the sandbox's /tmp, tests named "describe › ...::title",
        # and a test file that does not load reported as a failure rather than left out.
        env = {"NODE_PATH": str(js / "node_modules"), "JEST_JUNIT_OUTPUT_DIR": "/tmp",
               "JEST_JUNIT_OUTPUT_NAME": "junit.xml", "JEST_JUNIT_CLASSNAME": "{classname}",
               "JEST_JUNIT_TITLE": "{title}", "JEST_JUNIT_ANCESTOR_SEPARATOR": " › ",
               "JEST_JUNIT_REPORT_TEST_SUITE_ERRORS": "true"}
        return TaskToolchain(ro_binds=[str(js)], path=[str(js / "node_modules" / ".bin")],
                             env=env)

    def missing(self, toolchains: Path) -> list[str]:
        """What the track needs that is not installed, each named with how to get it."""
        absent = [t for t in self.tools if shutil.which(t, path=BASE_PATH) is None]
        if self.name == "javascript":
            js = toolchains / "javascript"
            for need in ("node_modules/jest/bin/jest.js", "node_modules/jest-junit", "unskip.js"):
                if not (js / need).exists():
                    absent.append(f"{js / need} (benchmarks/polyglot_setup.sh)")
                    break
        if self.name == "java":
            absent += [f"{JAVA_LIBS}/{jar}.jar" for jar in (*_JAVA_CLASSPATH, _JAVA_LAUNCHER)
                       if not Path(JAVA_LIBS, f"{jar}.jar").is_file()]
        return absent


def _jest_command(js: Path) -> str:
    modules = js / "node_modules"
    # Exercism marks all tests but the first as skipped (`xtest`): unskip.js runs them all.
    # The configuration is given whole (none is read from the exercise's package.json, which
    # the solver may edit); one process (no workers); the transform cache in the sandbox's /tmp.
    config = json.dumps({"testEnvironment": "node", "cacheDirectory": "/tmp/jest-cache",
                         "setupFilesAfterEnv": [str(js / "unskip.js")]})
    return (f"node {q(str(modules / 'jest/bin/jest.js'))} --ci --runInBand --config {q(config)} "
            f"--reporters=default --reporters={q(str(modules / 'jest-junit'))}")


def _java_command(report: str) -> str:
    jars = ":".join(f"{JAVA_LIBS}/{jar}.jar" for jar in _JAVA_CLASSPATH)
    launcher = f"{JAVA_LIBS}/{_JAVA_LAUNCHER}.jar"
    javac_flags = " ".join(f"-J{f}" for f in _JVM)
    # Exercism disables all tests but the first (`@Disabled`): the condition is switched off
    # instead of the test file rewritten. Classes and reports go to the sandbox's /tmp.
    return (f"javac {javac_flags} -nowarn -encoding UTF-8 -d /tmp/classes -cp {jars} "
            "$(find src/main/java src/test/java -name '*.java') && "
            f"java {' '.join(_JVM)} -cp /tmp/classes:{jars}:{launcher} "
            "org.junit.platform.console.ConsoleLauncher --disable-banner --details=tree "
            "--include-engine=junit-jupiter --scan-class-path --reports-dir "
            f"{q(str(Path(report).parent))} "
            "--config=junit.jupiter.conditions.deactivate='org.junit.*DisabledCondition'")


LANGUAGES: dict[str, Language] = {
    "python": Language("python", ("python3",), "unittest"),
    "go": Language("go", ("go",), "go-json"),
    "rust": Language("rust", ("cargo",), "cargo"),
    "cpp": Language("cpp", ("cmake", "g++", "make"), "junit", "/tmp/report.xml"),
    "javascript": Language("javascript", ("node",), "junit", "/tmp/junit.xml"),
    "java": Language("java", ("javac", "java"), "junit", "/tmp/junit/TEST-junit-jupiter.xml"),
}
