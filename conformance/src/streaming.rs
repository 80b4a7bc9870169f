//! A command that keeps running while a test talks to it (`kubectl logs -f`, `attach`,
//! `port-forward`, `debug -i`): its stdout read line by line on a thread as it comes, its
//! stderr collected on another, its stdin written when the test has something to say (and
//! kept open meanwhile), waited on with a deadline, and killed when dropped (also when the
//! test fails).

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

/// A running command and the stdout lines it has printed so far.
pub struct Streaming {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
    stderr: Arc<Mutex<String>>,
}

impl Streaming {
    /// Starts `command` (typically [`crate::cluster::RkubeServer::kubectl_command`] with its
    /// arguments) with no stdin.
    pub fn start(command: &mut Command) -> Streaming {
        Self::spawn(command.stdin(Stdio::null()))
    }

    /// Starts `command` with its stdin a pipe the test writes with [`Streaming::send`] and
    /// closes with [`Streaming::close_stdin`]; it stays open until then.
    pub fn start_interactive(command: &mut Command) -> Streaming {
        Self::spawn(command.stdin(Stdio::piped()))
    }

    fn spawn(command: &mut Command) -> Streaming {
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {:?}: {e}", command.get_program()));
        let stdout = child.stdout.take().expect("stdout");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let collected = Arc::new(Mutex::new(String::new()));
        let sink = collected.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let mut text = sink.lock().unwrap();
                text.push_str(&line);
                text.push('\n');
            }
        });
        let stdin = child.stdin.take();
        Streaming { child, stdin, lines, seen: Vec::new(), stderr: collected }
    }

    /// Writes `text` to its stdin (see [`Streaming::start_interactive`]).
    pub fn send(&mut self, text: &str) {
        let stdin = self.stdin.as_mut().expect("started with start_interactive, stdin open");
        stdin.write_all(text.as_bytes()).expect("write to the command's stdin");
        stdin.flush().expect("flush the command's stdin");
    }

    /// Closes its stdin: the command reads the end of its input.
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// The stdout lines read so far (by [`Streaming::wait_for_line`]).
    pub fn seen(&self) -> &[String] {
        &self.seen
    }

    /// Its stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Waits (at most `timeout`) for a stdout line that `check` accepts, and returns the
    /// first such line. Fails the test when the time is up or stdout ends first.
    pub fn wait_for_line(&mut self, check: impl Fn(&str) -> bool, timeout: Duration) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(line) = self.seen.iter().find(|l| check(l)) {
                return line.clone();
            }
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "no such line within {timeout:?}; saw {:?}\n{}",
                self.seen,
                self.stderr()
            );
            match self.lines.recv_timeout(left.min(Duration::from_millis(200))) {
                Ok(line) => self.seen.push(line),
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    panic!("the command ended early; saw {:?}\n{}", self.seen, self.stderr())
                }
            }
        }
    }

    /// Whether it has not exited yet.
    pub fn still_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Waits (at most `timeout`) for it to exit on its own.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        None
    }

    /// Waits (at most `timeout`) until its stderr contains `text`; returns the stderr then
    /// (also when the time ran out).
    pub fn wait_stderr(&self, text: &str, timeout: Duration) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            let stderr = self.stderr();
            if stderr.contains(text) || Instant::now() > deadline {
                return stderr;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Streaming {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
