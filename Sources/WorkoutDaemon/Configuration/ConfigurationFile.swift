import Foundation
import TOMLKit
import WorkoutCore

extension DaemonConfiguration {
  /// Reads `text` (the contents of `file`) over the defaults. Unknown sections or keys, wrong
  /// types and values out of range are all errors: a typo must not silently mean a default.
  /// Each section is read by the settings it makes (`ConfigurationSections.swift`), in this
  /// order: a later one may check an earlier one ([usb_drive] against [export], [zones] from
  /// [rider]).
  public static func parse(
    _ text: String, file: String, environment: [String: String] = ProcessInfo.processInfo.environment
  ) throws(ConfigurationError) -> DaemonConfiguration {
    var configuration = DaemonConfiguration(environment: environment)
    let root: TOMLTable
    do {
      root = try TOMLTable(string: text)
    } catch let error as TOMLParseError {
      throw ConfigurationError(
        problems: ["\(file):\(error.source.begin.line):\(error.source.begin.column): \(error.description)"])
    } catch {
      throw ConfigurationError(problems: ["\(file): \(error)"])
    }
    var sections: [TOMLSection] = []
    func section(_ name: String) -> TOMLSection {
      let section = TOMLSection(name, in: root, file: file)
      sections.append(section)
      return section
    }
    configuration.readService(section("service"))
    configuration.readSession(section("session"))
    configuration.readAutoPause(section("auto_pause"))
    configuration.readSim(section("sim"))
    configuration.gps.read(section("gps"))
    configuration.buttons.read(section("buttons"))
    configuration.led.read(section("led"))
    configuration.buzzer.read(section("buzzer"))
    configuration.barometer.read(section("barometer"))
    configuration.imu.read(section("imu"))
    configuration.battery.read(section("battery"))
    configuration.sensors.read(section("sensors"))
    let ant = section("ant")
    configuration.ant.read(ant)
    if !configuration.sensors.ant.isEmpty && configuration.ant.networkKeyFile == nil {
      ant.problem(
        "network_key_file",
        "must name the file with the ANT+ network key, as [sensors] names ANT+ sensors (none ships with workoutd: see the README's \"ANT+ sensors\")"
      )
    }
    configuration.export.read(section("export"))
    configuration.usbDrive.read(section("usb_drive"), export: configuration.export)
    let rider = section("rider")
    configuration.rider.read(rider)
    configuration.readZones(section("zones"), rider: rider)
    configuration.readMetrics(section("metrics"))
    configuration.web.read(section("web"))
    configuration.upload.read(
      section("upload"), intervalsICU: section("intervals_icu"), strava: section("strava"), webDAV: section("webdav"))

    var problems: [String] = []
    let known = sections.map(\.name)
    for key in root.keys where !known.contains(key) {
      let what = root[key]?.table != nil ? "section [\(key)]" : "key \"\(key)\" outside any section"
      problems.append("\(file): unknown \(what) (known: \(known.map { "[\($0)]" }.joined(separator: ", ")))")
    }
    for section in sections {
      problems += section.finish(among: sections)
    }
    guard problems.isEmpty else { throw ConfigurationError(problems: problems) }
    return configuration
  }

  /// Reads the configuration file at `path`. A missing file is an error only if `required`
  /// (an explicit `--config`); the default path may be absent, meaning all defaults.
  public static func load(
    path: String, required: Bool, environment: [String: String] = ProcessInfo.processInfo.environment
  ) throws(ConfigurationError) -> DaemonConfiguration {
    guard FileManager.default.fileExists(atPath: path) else {
      if required { throw ConfigurationError(problems: ["\(path): no such file"]) }
      return DaemonConfiguration(environment: environment)
    }
    guard let data = FileManager.default.contents(atPath: path) else {
      throw ConfigurationError(problems: ["\(path): cannot be read (permissions?)"])
    }
    guard let text = String(data: data, encoding: .utf8) else {
      throw ConfigurationError(problems: ["\(path): is not UTF-8 text"])
    }
    return try parse(text, file: path, environment: environment)
  }
}
