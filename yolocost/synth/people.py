"""Who uses the cluster: projects (cost centers) and users, each user in one or two projects."""

from __future__ import annotations

PROJECTS = (
    "retail-shelf",
    "drone-survey",
    "traffic-analytics",
    "视觉质检",
    "medical-imaging",
    "warehouse-robotics",
)

# user -> (projects, relative activity)
USERS = {
    "alice.meyer": (("retail-shelf",), 1.6),
    "ben.okafor": (("retail-shelf", "warehouse-robotics"), 1.0),
    "carla.rossi": (("drone-survey",), 1.3),
    "david.kim": (("drone-survey", "traffic-analytics"), 0.8),
    "emma.schulz": (("traffic-analytics",), 1.2),
    "farid.haddad": (("traffic-analytics", "medical-imaging"), 0.7),
    "grace.lin": (("medical-imaging",), 1.1),
    "hiro.tanaka": (("视觉质检", "warehouse-robotics"), 0.9),
    "张伟": (("视觉质检",), 1.4),
    "ines.silva": (("warehouse-robotics",), 1.0),
    "jonas.berg": (("medical-imaging", "retail-shelf"), 0.6),
    "kate.novak": (("drone-survey",), 0.5),
    "liam.walsh": (("视觉质检", "drone-survey"), 0.8),
    "maria.lopez": (("warehouse-robotics", "traffic-analytics"), 0.9),
}
