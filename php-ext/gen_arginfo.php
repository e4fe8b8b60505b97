<?php
/*
 * Writes ephpm_arginfo.h from ephpm.stub.php, as php-src's gen_stub.php
 * does for the extensions in php-src. gen_stub.php needs nikic/php-parser,
 * which Debian 12 does not package and this build cannot download; this
 * generator reads the stub through PHP's own Reflection instead: it loads
 * the stub (whose functions and class are then userland declarations of
 * the same signatures) in a process without the extension.
 *
 * Usage: php -n php-ext/gen_arginfo.php           writes ephpm_arginfo.h
 *        php -n php-ext/gen_arginfo.php --check   exits 1 if it is stale
 *
 * What it understands is what the stub uses: functions with scalar, array,
 * callable and union types (nullable or not, by value or by reference,
 * literal defaults), and one exception class whose constants carry their C
 * value in a "@cvalue EXPR" tag.
 */

declare(strict_types=1);

if (extension_loaded('ephpm')) {
    fwrite(STDERR, "gen_arginfo: run it without the extension (php -n), whose functions the stub redeclares\n");
    exit(2);
}

$dir = __DIR__;
$stub = "$dir/ephpm.stub.php";
$target = "$dir/ephpm_arginfo.h";
$check = in_array('--check', $argv, true);

$before = get_defined_functions()['user'];
$classesBefore = get_declared_classes();
require $stub;
$functions = array_values(array_diff(get_defined_functions()['user'], $before));
$classes = array_values(array_diff(get_declared_classes(), $classesBefore));

/** The IS_* code of a single type name. */
function typeCode(string $name): string
{
    return match ($name) {
        'string' => 'IS_STRING',
        'int' => 'IS_LONG',
        'float' => 'IS_DOUBLE',
        'bool' => '_IS_BOOL',
        'array' => 'IS_ARRAY',
        'callable' => 'IS_CALLABLE',
        'mixed' => 'IS_MIXED',
        'void' => 'IS_VOID',
        'iterable' => 'IS_ITERABLE',
        default => throw new RuntimeException("gen_arginfo: type $name is not supported"),
    };
}

/** The MAY_BE_* mask of a type (a union, or a nullable single type). */
function typeMask(ReflectionType $type): string
{
    $names = $type instanceof ReflectionUnionType
        ? array_map(fn (ReflectionNamedType $t) => $t->getName(), $type->getTypes())
        : [$type->getName()];
    if ($type->allowsNull() && !in_array('null', $names, true)) {
        $names[] = 'null';
    }
    $bits = array_map(fn (string $n) => match ($n) {
        'bool' => 'MAY_BE_BOOL',
        'int' => 'MAY_BE_LONG',
        'float' => 'MAY_BE_DOUBLE',
        default => 'MAY_BE_' . strtoupper($n),
    }, $names);
    return implode('|', $bits);
}

/** Whether a type is a single named type (nullable or not). */
function isSingle(ReflectionType $type): bool
{
    return $type instanceof ReflectionNamedType && $type->getName() !== 'null';
}

/** A default value as the engine's arginfo takes it: PHP source, quoted for C. */
function defaultText(ReflectionParameter $p): string
{
    $v = $p->getDefaultValue();
    $php = match (true) {
        $v === null => 'null',
        is_bool($v) => $v ? 'true' : 'false',
        is_int($v) => (string) $v,
        is_float($v) => var_export($v, true),
        is_string($v) => "'" . addcslashes($v, "'\\") . "'",
        default => throw new RuntimeException('gen_arginfo: default of $' . $p->getName() . ' is not supported'),
    };
    return '"' . addcslashes($php, "\"\\") . '"';
}

/** The lines of one function's arginfo after its BEGIN line. */
function argLines(ReflectionFunction $f): array
{
    $lines = [];
    foreach ($f->getParameters() as $p) {
        $type = $p->getType() ?? throw new RuntimeException('gen_arginfo: $' . $p->getName() . ' has no type');
        $ref = $p->isPassedByReference() ? 1 : 0;
        $name = $p->getName();
        if (isSingle($type)) {
            $code = typeCode($type->getName());
            $null = $type->allowsNull() ? 1 : 0;
            $lines[] = $p->isDefaultValueAvailable()
                ? "\tZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE($ref, $name, $code, $null, " . defaultText($p) . ')'
                : "\tZEND_ARG_TYPE_INFO($ref, $name, $code, $null)";
        } else {
            $default = $p->isDefaultValueAvailable() ? defaultText($p) : 'NULL';
            $lines[] = "\tZEND_ARG_TYPE_MASK($ref, $name, " . typeMask($type) . ", $default)";
        }
    }
    return $lines;
}

/** The BEGIN line of a function's arginfo, for the name given. */
function beginLine(ReflectionFunction $f, string $name): string
{
    $type = $f->getReturnType() ?? throw new RuntimeException('gen_arginfo: ' . $f->getName() . ' has no return type');
    $required = $f->getNumberOfRequiredParameters();
    if (isSingle($type)) {
        $null = $type->allowsNull() ? 1 : 0;
        return "ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX($name, 0, $required, " . typeCode($type->getName()) . ", $null)";
    }
    return "ZEND_BEGIN_ARG_WITH_RETURN_TYPE_MASK_EX($name, 0, $required, " . typeMask($type) . ')';
}

$out = "/* This is a generated file, edit ephpm.stub.php instead and run\n"
     . " * php -n php-ext/gen_arginfo.php (ctest's arginfo-current checks it). */\n\n";

// Each function's arginfo; one identical to an earlier one is that one.
$seen = [];
foreach ($functions as $fn) {
    $f = new ReflectionFunction($fn);
    $body = implode("\n", argLines($f));
    $signature = beginLine($f, 'X') . "\n" . $body;
    $name = 'arginfo_' . $f->getName();
    if (isset($seen[$signature])) {
        $out .= "#define $name {$seen[$signature]}\n\n";
        continue;
    }
    $seen[$signature] = $name;
    $out .= beginLine($f, $name) . "\n" . ($body === '' ? '' : "$body\n") . "ZEND_END_ARG_INFO()\n\n";
}

foreach ($functions as $fn) {
    $out .= 'ZEND_FUNCTION(' . (new ReflectionFunction($fn))->getName() . ");\n";
}
$out .= "\nstatic const zend_function_entry ext_functions[] = {\n";
foreach ($functions as $fn) {
    $name = (new ReflectionFunction($fn))->getName();
    $out .= "\tZEND_FE($name, arginfo_$name)\n";
}
$out .= "\tZEND_FE_END\n};\n";

foreach ($classes as $class) {
    $c = new ReflectionClass($class);
    foreach ($c->getMethods() as $m) {
        if ($m->getDeclaringClass()->getName() === $class) {
            throw new RuntimeException("gen_arginfo: methods of $class are not supported");
        }
    }
    $parent = $c->getParentClass() ?: throw new RuntimeException("gen_arginfo: $class has no parent class");
    $id = str_replace('\\', '_', $class);
    $parentId = 'class_entry_' . str_replace('\\', '_', $parent->getName());
    $ns = $c->getNamespaceName();
    $short = $c->getShortName();
    $out .= "\nstatic const zend_function_entry class_{$id}_methods[] = {\n\tZEND_FE_END\n};\n\n";
    $out .= "static zend_class_entry *register_class_$id(zend_class_entry *$parentId)\n{\n";
    $out .= "\tzend_class_entry ce, *class_entry;\n\n";
    $out .= "\tINIT_NS_CLASS_ENTRY(ce, \"" . addcslashes($ns, '\\') . "\", \"$short\", class_{$id}_methods);\n";
    $out .= "\tclass_entry = zend_register_internal_class_ex(&ce, $parentId);\n";
    $constants = array_filter($c->getReflectionConstants(), fn ($k) => $k->getDeclaringClass()->getName() === $class);
    if ($constants !== []) {
        $out .= "\n";
    }
    foreach ($constants as $k) {
        if (!preg_match('/@cvalue\s+(\S+)/', (string) $k->getDocComment(), $m)) {
            throw new RuntimeException("gen_arginfo: $class::{$k->getName()} has no @cvalue");
        }
        $n = $k->getName();
        $out .= "\tzend_declare_class_constant_long(class_entry, \"$n\", sizeof(\"$n\") - 1, {$m[1]});\n";
    }
    $out .= "\n\treturn class_entry;\n}\n";
}

if ($check) {
    if (!is_file($target) || file_get_contents($target) !== $out) {
        fwrite(STDERR, "gen_arginfo: $target is not what ephpm.stub.php generates: run php -n php-ext/gen_arginfo.php\n");
        exit(1);
    }
    echo "gen_arginfo: $target is current\n";
    exit(0);
}
file_put_contents($target, $out);
echo "gen_arginfo: wrote $target\n";
