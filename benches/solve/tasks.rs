//! The solve bench's own tasks: routine one-to-two-line Python fixes, each with the test that fails before the fix
//! and passes after it (the proposal's validation command). Written for this bench; kept small and varied in kind
//! (operator, constant, comparison, string, index, argument order, missing return, default value, condition).

/// One task: the file the model sees and edits, the test the fix must pass, and the request a primary would write.
pub struct SolveTask {
    /// A short name for the table.
    pub name: &'static str,
    /// The file to fix.
    pub file: &'static str,
    /// Its text before the fix.
    pub source: &'static str,
    /// `test_<name>.py`: exits non-zero until the fix is made.
    pub test: &'static str,
    /// The scoped task.
    pub task: &'static str,
    /// Its acceptance criterion.
    pub criterion: &'static str,
}

/// Every task of the bench.
pub const TASKS: &[SolveTask] = &[
    SolveTask {
        name: "area",
        file: "geometry.py",
        source: "def area(width, height):\n    \"\"\"The area of a rectangle.\"\"\"\n    return width * width\n\n\ndef perimeter(width, height):\n    return 2 * (width + height)\n",
        test: "from geometry import area, perimeter\nassert area(3, 4) == 12\nassert perimeter(3, 4) == 14\n",
        task: "In geometry.py, area returns width * width; it must return width * height.",
        criterion: "area(3, 4) returns 12",
    },
    SolveTask {
        name: "discount",
        file: "shop.py",
        source: "TAX = 0.2\n\n\ndef with_discount(price, percent):\n    return price + price * percent / 100\n\n\ndef with_tax(price):\n    return price * (1 + TAX)\n",
        test: "from shop import with_discount, with_tax\nassert with_discount(200, 10) == 180\nassert abs(with_tax(100) - 120) < 1e-9\n",
        task: "In shop.py, with_discount adds the discount to the price; it must subtract it (price - price * percent / 100).",
        criterion: "with_discount(200, 10) returns 180",
    },
    SolveTask {
        name: "retries",
        file: "settings.py",
        source: "HOST = \"localhost\"\nPORT = 8080\nMAX_RETRIES = 3\nTIMEOUT_SECONDS = 30\n",
        test: "import settings\nassert settings.MAX_RETRIES == 5\nassert settings.PORT == 8080\n",
        task: "In settings.py, raise MAX_RETRIES from 3 to 5.",
        criterion: "MAX_RETRIES is 5",
    },
    SolveTask {
        name: "adult",
        file: "people.py",
        source: "def is_adult(age):\n    return age > 18\n\n\ndef is_child(age):\n    return age < 13\n",
        test: "from people import is_adult, is_child\nassert is_adult(18)\nassert not is_adult(17)\nassert is_child(5)\n",
        task: "In people.py, is_adult(18) returns False; an 18-year-old is an adult, so the comparison must be age >= 18.",
        criterion: "is_adult(18) returns True",
    },
    SolveTask {
        name: "greeting",
        file: "greet.py",
        source: "def greeting(name):\n    return \"Hello, \" + name\n\n\ndef farewell(name):\n    return \"Goodbye, \" + name\n",
        test: "from greet import greeting, farewell\nassert greeting(\"Ann\") == \"Hello, Ann!\"\nassert farewell(\"Ann\") == \"Goodbye, Ann\"\n",
        task: "In greet.py, greeting must end with an exclamation mark: greeting(\"Ann\") returns \"Hello, Ann!\".",
        criterion: "greeting(\"Ann\") == \"Hello, Ann!\"",
    },
    SolveTask {
        name: "last",
        file: "lists.py",
        source: "def first(items):\n    return items[0]\n\n\ndef last(items):\n    return items[1]\n",
        test: "from lists import first, last\nassert last([1, 2, 3]) == 3\nassert first([1, 2, 3]) == 1\n",
        task: "In lists.py, last returns items[1]; it must return the last item, items[-1].",
        criterion: "last([1, 2, 3]) returns 3",
    },
    SolveTask {
        name: "average",
        file: "stats.py",
        source: "def total(values):\n    return sum(values)\n\n\ndef average(values):\n    return sum(values) / 2\n",
        test: "from stats import average, total\nassert average([2, 4, 6]) == 4\nassert total([1, 2]) == 3\n",
        task: "In stats.py, average divides by 2; it must divide by the number of values, len(values).",
        criterion: "average([2, 4, 6]) returns 4",
    },
    SolveTask {
        name: "celsius",
        file: "temperature.py",
        source: "def to_fahrenheit(celsius):\n    return celsius * 9 / 5 + 23\n\n\ndef to_celsius(fahrenheit):\n    return (fahrenheit - 32) * 5 / 9\n",
        test: "from temperature import to_fahrenheit, to_celsius\nassert to_fahrenheit(100) == 212\nassert to_celsius(212) == 100\n",
        task: "In temperature.py, to_fahrenheit adds 23; the formula adds 32: celsius * 9 / 5 + 32.",
        criterion: "to_fahrenheit(100) returns 212",
    },
    SolveTask {
        name: "even",
        file: "parity.py",
        source: "def is_even(n):\n    return n % 2 == 1\n\n\ndef square(n):\n    return n * n\n",
        test: "from parity import is_even, square\nassert is_even(4)\nassert not is_even(3)\nassert square(3) == 9\n",
        task: "In parity.py, is_even tests n % 2 == 1, which is odd; it must test n % 2 == 0.",
        criterion: "is_even(4) is True and is_even(3) is False",
    },
    SolveTask {
        name: "power",
        file: "mathutil.py",
        source: "def power(base, exponent):\n    return exponent ** base\n\n\ndef double(x):\n    return 2 * x\n",
        test: "from mathutil import power, double\nassert power(2, 3) == 8\nassert double(4) == 8\n",
        task: "In mathutil.py, power has its operands swapped: it must return base ** exponent.",
        criterion: "power(2, 3) returns 8",
    },
    SolveTask {
        name: "missing-return",
        file: "names.py",
        source: "def full_name(first, last):\n    name = first + \" \" + last\n\n\ndef initials(first, last):\n    return first[0] + last[0]\n",
        test: "from names import full_name, initials\nassert full_name(\"Ada\", \"Lovelace\") == \"Ada Lovelace\"\nassert initials(\"Ada\", \"Lovelace\") == \"AL\"\n",
        task: "In names.py, full_name builds the name but never returns it; it must return name.",
        criterion: "full_name(\"Ada\", \"Lovelace\") returns \"Ada Lovelace\"",
    },
    SolveTask {
        name: "default",
        file: "paging.py",
        source: "def page(items, size=100):\n    return items[:size]\n\n\ndef pages(items, size=10):\n    return (len(items) + size - 1) // size\n",
        test: "from paging import page, pages\nassert page(list(range(50))) == list(range(10))\nassert pages(list(range(25))) == 3\n",
        task: "In paging.py, page's default size is 100; it must be 10, like pages.",
        criterion: "page(items) returns the first 10 items",
    },
    SolveTask {
        name: "upper",
        file: "text.py",
        source: "def shout(message):\n    return message.lower() + \"!\"\n\n\ndef whisper(message):\n    return message.lower() + \"...\"\n",
        test: "from text import shout, whisper\nassert shout(\"hey\") == \"HEY!\"\nassert whisper(\"HEY\") == \"hey...\"\n",
        task: "In text.py, shout lowercases its message; it must uppercase it (message.upper()).",
        criterion: "shout(\"hey\") returns \"HEY!\"",
    },
    SolveTask {
        name: "range",
        file: "counting.py",
        source: "def count_to(n):\n    return list(range(1, n))\n\n\ndef count_down(n):\n    return list(range(n, 0, -1))\n",
        test: "from counting import count_to, count_down\nassert count_to(3) == [1, 2, 3]\nassert count_down(3) == [3, 2, 1]\n",
        task: "In counting.py, count_to(3) stops at 2; it must include n: range(1, n + 1).",
        criterion: "count_to(3) returns [1, 2, 3]",
    },
    SolveTask {
        name: "empty",
        file: "validate.py",
        source: "def is_blank(text):\n    return len(text) == 1\n\n\ndef has_digits(text):\n    return any(c.isdigit() for c in text)\n",
        test: "from validate import is_blank, has_digits\nassert is_blank(\"\")\nassert not is_blank(\"a\")\nassert has_digits(\"a1\")\n",
        task: "In validate.py, is_blank tests len(text) == 1; a blank text has length 0, so it must test len(text) == 0.",
        criterion: "is_blank(\"\") is True and is_blank(\"a\") is False",
    },
    SolveTask {
        name: "max",
        file: "scores.py",
        source: "def best(scores):\n    return min(scores)\n\n\ndef worst(scores):\n    return min(scores)\n",
        test: "from scores import best, worst\nassert best([3, 9, 4]) == 9\nassert worst([3, 9, 4]) == 3\n",
        task: "In scores.py, best returns min(scores); the best score is the highest, so it must return max(scores).",
        criterion: "best([3, 9, 4]) returns 9",
    },
];
