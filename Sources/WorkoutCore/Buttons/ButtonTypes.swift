/// The logger's buttons, one GPIO line each.
public enum ButtonID: String, Sendable, Hashable, Codable, CaseIterable, Comparable {
  /// Start a ride, pause it, resume it.
  case start
  /// Mark a lap.
  case lap
  /// End the ride: only by a long press.
  case stop

  public static func < (lhs: ButtonID, rhs: ButtonID) -> Bool { lhs.index < rhs.index }

  var index: Int {
    switch self {
    case .start: 0
    case .lap: 1
    case .stop: 2
    }
  }
}

/// The electrical level of a GPIO line.
public enum LineLevel: String, Sendable, Hashable, Codable, CaseIterable {
  case low
  case high
}

/// How button lines are read.
public struct ButtonConfiguration: Sendable, Hashable {
  /// A line's new level is believed only after it has stayed there this long, seconds. Contacts
  /// bounce for a few milliseconds; libgpiod 1.6 has no kernel debounce.
  public let debounce: Double
  /// A press held this long (after it is believed) is a long press, seconds.
  public let longPress: Double
  private let pressedLevels: [ButtonID: LineLevel]

  public enum Invalid: Error, Sendable, Hashable, CustomStringConvertible {
    case debounce(Double)
    case longPress(Double)

    public var description: String {
      switch self {
      case .debounce(let v): "button debounce must be a finite time from 0 to 1 s, not \(v)"
      case .longPress(let v):
        "button long press must be finite, positive and longer than the debounce, not \(v)"
      }
    }
  }

  /// - Parameters:
  ///   - debounce: seconds a level must be stable (default 30 ms).
  ///   - longPress: seconds for a long press (default 2 s).
  ///   - pressedLevel: the level of a pressed button. The default `.low` is the usual wiring: a
  ///     switch to ground with a pull-up. Pass `.high` for a switch to 3.3 V with a pull-down,
  ///     or when the line is requested active-low so the kernel already inverts it.
  ///   - overrides: per-button pressed levels where buttons are wired differently.
  public init(
    debounce: Double = 0.030, longPress: Double = 2.0, pressedLevel: LineLevel = .low,
    overrides: [ButtonID: LineLevel] = [:]
  ) throws(Invalid) {
    guard debounce.isFinite, debounce >= 0, debounce <= 1 else { throw .debounce(debounce) }
    guard longPress.isFinite, longPress > 0, longPress > debounce else {
      throw .longPress(longPress)
    }
    self.debounce = debounce
    self.longPress = longPress
    var levels: [ButtonID: LineLevel] = [:]
    for button in ButtonID.allCases { levels[button] = overrides[button] ?? pressedLevel }
    self.pressedLevels = levels
  }

  /// 30 ms debounce, 2 s long press, buttons pull the line low.
  public static let standard = try! ButtonConfiguration()

  /// The level at which `button` reads as pressed.
  public func pressedLevel(for button: ButtonID) -> LineLevel { pressedLevels[button] ?? .low }

  func isPressed(_ button: ButtonID, _ level: LineLevel) -> Bool {
    level == pressedLevel(for: button)
  }
}

/// What a rider did with one button.
public enum ButtonGesture: String, Sendable, Hashable, Codable {
  /// Pressed and released before the long-press time; reported on release.
  case shortPress
  /// Held for the long-press time; reported at that moment, while still held.
  case longPress
}

/// A recognised gesture.
public struct ButtonEvent: Sendable, Hashable {
  public var button: ButtonID
  public var gesture: ButtonGesture
  /// When it was recognised, on the caller's monotonic clock: the debounced release for a short
  /// press; the moment the press reached `longPress` for a long press. It does not depend on
  /// when the caller happened to poll.
  public var time: Double
  /// How long the button was held (debounced press to debounced release, or `longPress`).
  public var heldFor: Double
}
