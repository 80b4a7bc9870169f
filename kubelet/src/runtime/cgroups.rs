//! A container's CPU and memory usage read straight from its cgroup, as cAdvisor reads it
//! (cheap: a few small files, no call to the container engine).
//!
//! Both hierarchies are read:
//!
//! - cgroup v1: `cpuacct.usage` (nanoseconds) of the `cpuacct` controller, and
//!   `memory.usage_in_bytes`, `memory.limit_in_bytes` and `memory.stat` (`total_*` keys, the
//!   container's whole subtree) of the `memory` controller, each where its controller is
//!   mounted (`/sys/fs/cgroup/cpuacct` or `/sys/fs/cgroup/cpu,cpuacct`, ...).
//! - cgroup v2 (one unified hierarchy): `cpu.stat` `usage_usec`, `memory.current`,
//!   `memory.max` and `memory.stat`.
//!
//! Where a container's cgroup is: from `/proc/<pid>/cgroup` of its main process mapped
//! through `/proc/self/mountinfo` ([`CgroupPaths::for_pid`]), or, without a process, from the
//! paths Docker's two cgroup drivers use ([`CgroupPaths::for_docker_id`]).
//!
//! The working set is the usage less the inactive file cache (what the kernel would reclaim
//! first), as the kubelet and cAdvisor define it; its eviction decisions and `kubectl top`
//! both use it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use chrono::Utc;

use super::ContainerStats;

/// Where one container's accounting files are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CgroupPaths {
    /// Separate controller hierarchies: the container's directory under `cpuacct` and under
    /// `memory`.
    V1 { cpuacct: PathBuf, memory: PathBuf },
    /// The container's directory in the unified hierarchy.
    V2 { dir: PathBuf },
}

/// One line of `/proc/<pid>/cgroup`: `hierarchy-id:controllers:path`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcCgroup {
    pub hierarchy: u32,
    /// Empty for the unified hierarchy (`0::/path`); `name=systemd` style names kept.
    pub controllers: Vec<String>,
    pub path: String,
}

/// Reads `/proc/<pid>/cgroup`.
pub fn parse_proc_cgroup(text: &str) -> Vec<ProcCgroup> {
    text.lines()
        .filter_map(|line| {
            let mut parts = line.splitn(3, ':');
            let hierarchy = parts.next()?.parse().ok()?;
            let controllers = parts.next()?;
            let path = parts.next()?.to_string();
            let controllers =
                controllers.split(',').filter(|c| !c.is_empty()).map(str::to_string).collect();
            Some(ProcCgroup { hierarchy, controllers, path })
        })
        .collect()
}

/// A cgroup mount from `/proc/self/mountinfo`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CgroupMount {
    /// The directory of the hierarchy this mount shows (`/` unless a cgroup namespace or a
    /// bind mount shows a subtree).
    pub root: String,
    pub mount_point: PathBuf,
    /// `cgroup2`, or `cgroup` for v1.
    pub fs_type: String,
    /// The v1 controllers of the mount (from its super options: `rw,cpu,cpuacct`).
    pub controllers: Vec<String>,
}

/// The cgroup mounts of a `mountinfo` file (`id parent dev root mount-point options
/// [optional...] - fstype source super-options`).
pub fn parse_mountinfo(text: &str) -> Vec<CgroupMount> {
    text.lines()
        .filter_map(|line| {
            let (before, after) = line.split_once(" - ")?;
            let fields: Vec<&str> = before.split(' ').collect();
            let mut after = after.split(' ');
            let fs_type = after.next()?;
            if fs_type != "cgroup" && fs_type != "cgroup2" {
                return None;
            }
            let _source = after.next();
            let super_options = after.next().unwrap_or("");
            let controllers = if fs_type == "cgroup" {
                super_options
                    .split(',')
                    .filter(|o| {
                        !matches!(*o, "rw" | "ro" | "relatime" | "noatime" | "nosuid" | "nodev")
                            && !o.contains('=')
                    })
                    .map(str::to_string)
                    .collect()
            } else {
                Vec::new()
            };
            Some(CgroupMount {
                root: unescape_octal(fields.get(3)?),
                mount_point: PathBuf::from(unescape_octal(fields.get(4)?)),
                fs_type: fs_type.to_string(),
                controllers,
            })
        })
        .collect()
}

/// mountinfo escapes spaces, tabs, newlines and backslashes as `\ooo`.
fn unescape_octal(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let code = (bytes[i] == b'\\')
            .then(|| bytes.get(i + 1..i + 4))
            .flatten()
            .and_then(|digits| std::str::from_utf8(digits).ok())
            .and_then(|digits| u8::from_str_radix(digits, 8).ok());
        match code {
            Some(c) => {
                out.push(c);
                i += 4;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The directory of cgroup `path` under `mount`, or None when the mount does not show it.
fn under_mount(mount: &CgroupMount, path: &str) -> Option<PathBuf> {
    let rest = if mount.root == "/" {
        path
    } else {
        let rest = path.strip_prefix(mount.root.as_str())?;
        if !(rest.is_empty() || rest.starts_with('/')) {
            return None;
        }
        rest
    };
    Some(mount.mount_point.join(rest.trim_start_matches('/')))
}

impl CgroupPaths {
    /// Where a process's cgroups are, given its `/proc/<pid>/cgroup` and the mounts: the v1
    /// `cpuacct` and `memory` hierarchies when both are mounted, else the unified one.
    pub fn resolve(cgroups: &[ProcCgroup], mounts: &[CgroupMount]) -> Option<CgroupPaths> {
        let v1 = |controller: &str| -> Option<PathBuf> {
            let line = cgroups.iter().find(|c| c.controllers.iter().any(|n| n == controller))?;
            mounts
                .iter()
                .filter(|m| m.fs_type == "cgroup" && m.controllers.iter().any(|n| n == controller))
                .find_map(|m| under_mount(m, &line.path))
        };
        if let (Some(cpuacct), Some(memory)) = (v1("cpuacct"), v1("memory")) {
            return Some(CgroupPaths::V1 { cpuacct, memory });
        }
        let unified = cgroups.iter().find(|c| c.hierarchy == 0 && c.controllers.is_empty())?;
        mounts
            .iter()
            .filter(|m| m.fs_type == "cgroup2")
            .find_map(|m| under_mount(m, &unified.path))
            .map(|dir| CgroupPaths::V2 { dir })
    }

    /// The cgroups of process `pid`, if it exists and they are mounted here.
    pub fn for_pid(pid: i64) -> Option<CgroupPaths> {
        let cgroups = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
        let mounts = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
        let paths = CgroupPaths::resolve(&parse_proc_cgroup(&cgroups), &parse_mountinfo(&mounts))?;
        paths.exists().then_some(paths)
    }

    /// The cgroup Docker made for container `id`, under either cgroup driver (`cgroupfs`:
    /// `docker/<id>`; `systemd`: `system.slice/docker-<id>.scope`), on either hierarchy.
    pub fn for_docker_id(id: &str) -> Option<CgroupPaths> {
        Self::candidates(Path::new("/sys/fs/cgroup"), id).into_iter().find(CgroupPaths::exists)
    }

    /// Where Docker's cgroup drivers put container `id`, v1 layouts first.
    pub fn candidates(root: &Path, id: &str) -> Vec<CgroupPaths> {
        let subpaths = [format!("docker/{id}"), format!("system.slice/docker-{id}.scope")];
        let mut out = Vec::new();
        for sub in &subpaths {
            for cpu in ["cpuacct", "cpu,cpuacct", "cpuacct,cpu"] {
                out.push(CgroupPaths::V1 {
                    cpuacct: root.join(cpu).join(sub),
                    memory: root.join("memory").join(sub),
                });
            }
        }
        for sub in &subpaths {
            out.push(CgroupPaths::V2 { dir: root.join(sub) });
        }
        out
    }

    fn exists(&self) -> bool {
        match self {
            CgroupPaths::V1 { cpuacct, memory } => {
                cpuacct.join("cpuacct.usage").is_file() && memory.join("memory.stat").is_file()
            }
            CgroupPaths::V2 { dir } => dir.join("cpu.stat").is_file(),
        }
    }

    /// Reads the current usage. Fails when the cgroup is gone (the container stopped).
    pub fn read(&self) -> std::io::Result<ContainerStats> {
        let read = |dir: &Path, file: &str| std::fs::read_to_string(dir.join(file));
        let timestamp = Utc::now();
        match self {
            CgroupPaths::V1 { cpuacct, memory } => Ok(v1_stats(
                timestamp,
                &read(cpuacct, "cpuacct.usage")?,
                &read(memory, "memory.usage_in_bytes")?,
                &read(memory, "memory.limit_in_bytes").unwrap_or_default(),
                &read(memory, "memory.stat")?,
            )),
            CgroupPaths::V2 { dir } => Ok(v2_stats(
                timestamp,
                &read(dir, "cpu.stat")?,
                &read(dir, "memory.current").unwrap_or_default(),
                &read(dir, "memory.max").unwrap_or_default(),
                &read(dir, "memory.stat").unwrap_or_default(),
            )),
        }
    }
}

/// A flat-keyed file (`key value` per line: `memory.stat`, `cpu.stat`).
pub fn parse_flat_keyed(text: &str) -> HashMap<&str, u64> {
    text.lines()
        .filter_map(|line| {
            let (key, value) = line.split_once(' ')?;
            Some((key, value.trim().parse().ok()?))
        })
        .collect()
}

/// The v1 memory limit, None when unlimited (the kernel writes a page-rounded i64::MAX).
fn v1_limit(text: &str) -> Option<u64> {
    text.trim().parse::<u64>().ok().filter(|l| *l < (1 << 62))
}

/// Usage from the v1 files' contents.
pub fn v1_stats(
    timestamp: chrono::DateTime<Utc>,
    cpuacct_usage: &str,
    usage_in_bytes: &str,
    limit_in_bytes: &str,
    memory_stat: &str,
) -> ContainerStats {
    let stat = parse_flat_keyed(memory_stat);
    let usage = usage_in_bytes.trim().parse::<u64>().unwrap_or(0);
    // `total_*` counts the container's whole subtree; a kernel without hierarchy support
    // only has the plain keys.
    let key = |name: &str| stat.get(format!("total_{name}").as_str()).or(stat.get(name)).copied();
    let inactive_file = key("inactive_file").unwrap_or(0);
    ContainerStats {
        timestamp,
        cpu_usage_ns: cpuacct_usage.trim().parse().unwrap_or(0),
        memory_usage_bytes: usage,
        memory_working_set_bytes: usage.saturating_sub(inactive_file),
        memory_rss_bytes: key("rss"),
        memory_limit_bytes: v1_limit(limit_in_bytes),
        page_faults: key("pgfault"),
        major_page_faults: key("pgmajfault"),
    }
}

/// Usage from the v2 files' contents.
pub fn v2_stats(
    timestamp: chrono::DateTime<Utc>,
    cpu_stat: &str,
    memory_current: &str,
    memory_max: &str,
    memory_stat: &str,
) -> ContainerStats {
    let cpu = parse_flat_keyed(cpu_stat);
    let stat = parse_flat_keyed(memory_stat);
    let usage = memory_current.trim().parse::<u64>().unwrap_or(0);
    let inactive_file = stat.get("inactive_file").copied().unwrap_or(0);
    ContainerStats {
        timestamp,
        cpu_usage_ns: cpu.get("usage_usec").copied().unwrap_or(0).saturating_mul(1000),
        memory_usage_bytes: usage,
        memory_working_set_bytes: usage.saturating_sub(inactive_file),
        memory_rss_bytes: stat.get("anon").copied(),
        // `max` when unlimited.
        memory_limit_bytes: memory_max.trim().parse().ok(),
        page_faults: stat.get("pgfault").copied(),
        major_page_faults: stat.get("pgmajfault").copied(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO_V1: &str = "\
24 31 0:22 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw
25 24 0:23 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:8 - tmpfs tmpfs ro,mode=755
26 25 0:24 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw
27 25 0:25 / /sys/fs/cgroup/systemd rw,nosuid,nodev,noexec,relatime shared:10 - cgroup cgroup rw,xattr,name=systemd
30 25 0:28 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid,nodev,noexec,relatime shared:13 - cgroup cgroup rw,cpu,cpuacct
31 25 0:29 / /sys/fs/cgroup/memory rw,nosuid,nodev,noexec,relatime shared:14 - cgroup cgroup rw,memory
";

    const PROC_CGROUP_V1: &str = "\
12:memory:/docker/abc
4:cpu,cpuacct:/docker/abc
1:name=systemd:/docker/abc
0::/docker/abc
";

    #[test]
    fn v1_controllers_are_found_through_their_mounts() {
        let cgroups = parse_proc_cgroup(PROC_CGROUP_V1);
        assert_eq!(cgroups[1].controllers, vec!["cpu", "cpuacct"]);
        assert_eq!(
            cgroups[3],
            ProcCgroup { hierarchy: 0, controllers: vec![], path: "/docker/abc".into() }
        );
        let mounts = parse_mountinfo(MOUNTINFO_V1);
        assert_eq!(mounts.len(), 4, "{mounts:?}");
        assert_eq!(mounts[2].controllers, vec!["cpu", "cpuacct"]);
        assert_eq!(
            CgroupPaths::resolve(&cgroups, &mounts),
            Some(CgroupPaths::V1 {
                cpuacct: "/sys/fs/cgroup/cpu,cpuacct/docker/abc".into(),
                memory: "/sys/fs/cgroup/memory/docker/abc".into(),
            })
        );
    }

    #[test]
    fn the_unified_hierarchy_serves_when_v1_controllers_are_absent() {
        let mounts = parse_mountinfo(
            "29 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot\n",
        );
        let cgroups = parse_proc_cgroup("0::/system.slice/docker-abc.scope\n");
        assert_eq!(
            CgroupPaths::resolve(&cgroups, &mounts),
            Some(CgroupPaths::V2 { dir: "/sys/fs/cgroup/system.slice/docker-abc.scope".into() })
        );
        // A cgroup namespace shows only a subtree: paths are relative to its root.
        let mounts =
            parse_mountinfo("29 23 0:26 /kubepods /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n");
        let cgroups = parse_proc_cgroup("0::/kubepods/pod1/c1\n");
        assert_eq!(
            CgroupPaths::resolve(&cgroups, &mounts),
            Some(CgroupPaths::V2 { dir: "/sys/fs/cgroup/pod1/c1".into() })
        );
        assert_eq!(CgroupPaths::resolve(&parse_proc_cgroup("0::/elsewhere\n"), &mounts), None);
    }

    #[test]
    fn docker_driver_layouts_are_candidates() {
        let all = CgroupPaths::candidates(Path::new("/cg"), "abc");
        assert!(all.contains(&CgroupPaths::V1 {
            cpuacct: "/cg/cpuacct/docker/abc".into(),
            memory: "/cg/memory/docker/abc".into()
        }));
        assert!(all.contains(&CgroupPaths::V2 { dir: "/cg/system.slice/docker-abc.scope".into() }));
        assert!(all.contains(&CgroupPaths::V2 { dir: "/cg/docker/abc".into() }));
    }

    #[test]
    fn v1_files_give_usage_and_a_working_set_without_inactive_file() {
        let stat =
            "cache 331776\nrss 57344\ninactive_file 1\ntotal_cache 67108864\ntotal_rss 4096000\n\
                    total_inactive_file 1048576\ntotal_pgfault 1156\ntotal_pgmajfault 2\n";
        let s = v1_stats(Utc::now(), "3041348950\n", "73400320\n", "9223372036854771712\n", stat);
        assert_eq!(s.cpu_usage_ns, 3_041_348_950);
        assert_eq!(s.memory_usage_bytes, 73_400_320);
        assert_eq!(s.memory_working_set_bytes, 73_400_320 - 1_048_576);
        assert_eq!(s.memory_rss_bytes, Some(4_096_000));
        assert_eq!(s.memory_limit_bytes, None, "unlimited");
        assert_eq!((s.page_faults, s.major_page_faults), (Some(1156), Some(2)));
        let limited = v1_stats(Utc::now(), "0", "10", "268435456", "");
        assert_eq!(limited.memory_limit_bytes, Some(268_435_456));
        // More inactive cache than usage (a race between the two reads): zero, not a wrap.
        let raced = v1_stats(Utc::now(), "0", "10", "", "total_inactive_file 20\n");
        assert_eq!(raced.memory_working_set_bytes, 0);
    }

    #[test]
    fn v2_files_give_usage_in_nanoseconds_and_bytes() {
        let cpu = "usage_usec 2500123\nuser_usec 2000000\nsystem_usec 500123\nnr_periods 0\n";
        let stat = "anon 4194304\nfile 2097152\ninactive_file 1048576\npgfault 77\npgmajfault 1\n";
        let s = v2_stats(Utc::now(), cpu, "8388608\n", "max\n", stat);
        assert_eq!(s.cpu_usage_ns, 2_500_123_000);
        assert_eq!(s.memory_usage_bytes, 8_388_608);
        assert_eq!(s.memory_working_set_bytes, 8_388_608 - 1_048_576);
        assert_eq!(s.memory_rss_bytes, Some(4_194_304));
        assert_eq!(s.memory_limit_bytes, None);
        assert_eq!((s.page_faults, s.major_page_faults), (Some(77), Some(1)));
        assert_eq!(
            v2_stats(Utc::now(), cpu, "1", "536870912\n", "").memory_limit_bytes,
            Some(536_870_912)
        );
    }

    #[test]
    fn mountinfo_escapes_are_undone() {
        assert_eq!(unescape_octal(r"/a\040b"), "/a b");
        assert_eq!(unescape_octal(r"/plain"), "/plain");
        assert_eq!(unescape_octal(r"/end\"), "/end\\");
    }
}
