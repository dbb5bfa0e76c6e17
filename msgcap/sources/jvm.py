"""The JVM inside the msgcap process that runs a JMS provider's own client (JPype), and the
bridge class msgcap compiles against the provider's jars (``msgcap/sources/java/Bridge.java``).

A process has one JVM for its life (JPype cannot start a second): the first ``start``
starts it with ``jvm.bootoptions``; a later one must ask for the same (the JVM is the
process's, so this module keeps what it was started with). The Java found is
``JAVA_HOME``'s, else the ``java`` on the PATH. The bridge is compiled once per machine, by
the JDK's compiler inside that JVM, into the cache (``MSGCAP_CACHE``, else
``$XDG_CACHE_HOME/msgcap``, else ``~/.cache/msgcap``), under ``jvm/`` and a hash of its source,
its namespace (``javax.jms`` or ``jakarta.jms``, whichever the provider's jars hold) and the
Java version. Every failure is a ``SourceError`` naming the property to change.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import logging
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from props.errors import SourceError
from props.settings import JvmProvider

log = logging.getLogger("msgcap.source")

BRIDGE_SOURCE = Path(__file__).with_name("java") / "Bridge.java"
BRIDGE_CLASS = "msgcap.jvm.Bridge"
NAMESPACES = ("jakarta.jms", "javax.jms")


def _cache_dir() -> Path:
    root = os.environ.get("MSGCAP_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
        "msgcap")
    return Path(root) / "jvm"


def java_library() -> str:
    """The JVM's shared library: ``JAVA_HOME``'s, else that of the ``java`` on the PATH."""
    home = os.environ.get("JAVA_HOME")
    if home:
        where = f"JAVA_HOME={home}"
    else:
        java = shutil.which("java")
        if java is None:
            raise SourceError("no Java found: set JAVA_HOME to a Java 11 or later installation "
                              "(a JDK the first time), or put its java on the PATH")
        home = str(Path(os.path.realpath(java)).parent.parent)
        where = f"the java on the PATH ({java})"
    for candidate in ("lib/server/libjvm.so", "jre/lib/amd64/server/libjvm.so",
                      "lib/server/libjvm.dylib"):
        path = os.path.join(home, candidate)
        if os.path.exists(path):
            return path
    raise SourceError(f"no JVM library (lib/server/libjvm.so) under {home}, from {where}: set "
                      "JAVA_HOME to a Java 11 or later installation")


@dataclass(frozen=True, slots=True)
class Started:
    """What the process's JVM was started with."""

    classpath: tuple[str, ...]
    options: tuple[str, ...]


_started: Started | None = None


def start(provider: JvmProvider) -> None:
    """Start the process's JVM for ``provider`` (once; a later call must ask for the same)."""
    global _started
    wanted = Started(provider.classpath, provider.options)
    if _started is not None:
        if _started != wanted:
            raise SourceError("this process's JVM was started with other jvm.bootoptions "
                              "(one JVM per process)")
        return
    try:
        import jpype
    except ImportError:
        raise SourceError("a JMS provider's own client needs JPype: pip install "
                          "'msgcap[jms]'") from None
    library = java_library()
    try:
        # -Xrs: SIGTERM, SIGINT and SIGHUP stay msgcap's (a stop at a transaction boundary);
        # without it the JVM takes them over and exits at once (status 143)
        reduced = () if "-Xrs" in provider.options else ("-Xrs",)
        jpype.startJVM(library, *provider.options, *reduced,
                       classpath=list(provider.classpath), convertStrings=False)
    except (OSError, RuntimeError, TypeError) as exc:
        raise SourceError(f"cannot start the JVM ({library}) with jvm.bootoptions: "
                          f"{exc}") from None
    _started = wanted
    atexit.register(_at_exit)  # (runs before JPype's own, registered earlier)
    log.info("JVM %s started (%s)", jpype.java.lang.System.getProperty("java.version"),
             library)


def leave_at_exit() -> None:
    """A provider's connection would not close: at exit the JVM is left to the system, for
    destroying it waits for every non-daemon thread, which that connection may keep alive."""
    import jpype.config

    jpype.config.destroy_jvm = False


def _at_exit() -> None:
    """Let JPype destroy the JVM only when no thread of a provider could make it wait for
    ever (destroying it waits for every non-daemon thread)."""
    import jpype

    if not jpype.isJVMStarted():
        return
    current = jpype.java.lang.Thread.currentThread()
    waiting = [str(t.getName()) for t in jpype.java.lang.Thread.getAllStackTraces().keySet()
               if t.isAlive() and not t.isDaemon() and t != current
               and str(t.getName()) != "DestroyJavaVM"]
    if waiting:
        log.debug("JVM threads left at exit: %s", ", ".join(waiting))
        leave_at_exit()


def namespace_of(factory: Any) -> str:
    """``jakarta.jms`` or ``javax.jms``: the JMS API the provider's connection factory is of."""
    import jpype

    for namespace in NAMESPACES:
        try:
            interface = jpype.JClass(f"{namespace}.ConnectionFactory")
        except TypeError:  # (JPype: no such class on the class path)
            continue
        if isinstance(factory, interface):
            return namespace
    raise SourceError(f"jms.connectionFactory: the object found ({factory.getClass().getName()})"
                      " is no javax.jms or jakarta.jms ConnectionFactory")


_bridges: dict[str, Any] = {}


def bridge_class(namespace: str) -> Any:
    """The bridge for ``namespace``, compiled into the cache the first time."""
    if namespace in _bridges:
        return _bridges[namespace]
    import jpype

    source = BRIDGE_SOURCE.read_text(encoding="utf-8")
    if namespace != "javax.jms":
        source = source.replace("javax.jms.", f"{namespace}.")
    version = str(jpype.java.lang.System.getProperty("java.version"))
    digest = hashlib.sha256(f"{source}\0{namespace}\0{version}".encode()).hexdigest()[:16]
    classes = _cache_dir() / digest
    if not (classes / "msgcap" / "jvm" / "Bridge.class").exists():
        _compile(source, classes)
    url = jpype.java.io.File(str(classes)).toURI().toURL()
    loader = jpype.java.net.URLClassLoader(
        jpype.JArray(jpype.java.net.URL)([url]),
        jpype.java.lang.ClassLoader.getSystemClassLoader())
    bridge = jpype.JClass(loader.loadClass(BRIDGE_CLASS))
    _bridges[namespace] = bridge
    return bridge


def _compile(source: str, classes: Path) -> None:
    """Compile the bridge with the JDK's compiler in this JVM, against its class path, into a
    new directory renamed to ``classes`` (processes compiling at once do not clash)."""
    import jpype

    compiler = jpype.JClass("javax.tools.ToolProvider").getSystemJavaCompiler()
    if compiler is None:
        raise SourceError("the JVM is a JRE: msgcap compiles its JMS bridge once with a JDK's "
                          "compiler; set JAVA_HOME to a JDK (e.g. openjdk-17-jdk-headless) for "
                          f"one run (the class is kept in {classes.parent})")
    classes.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="compile-", dir=classes.parent))
    try:
        (work / "Bridge.java").write_text(source, encoding="utf-8")
        output = jpype.java.io.ByteArrayOutputStream()
        classpath = jpype.java.lang.System.getProperty("java.class.path")
        arguments = ["-nowarn", "-proc:none", "-encoding", "UTF-8", "-cp", str(classpath),
                     "-d", str(work / "classes"), str(work / "Bridge.java")]
        status = compiler.run(None, output, output,
                              jpype.JArray(jpype.java.lang.String)(arguments))
        if status != 0:
            said = str(output.toString()).strip().splitlines()
            log.error("compiling the JMS bridge failed:\n%s", "\n".join(said),
                      extra={"file_only": True})
            raise SourceError("cannot compile msgcap's JMS bridge against the provider's jars "
                              f"(jvm.bootoptions): {said[0] if said else status} (the whole "
                              "output is in the log)")
        with contextlib.suppress(OSError):  # another process got there first: theirs is kept
            os.rename(work / "classes", classes)
    finally:
        shutil.rmtree(work, ignore_errors=True)
