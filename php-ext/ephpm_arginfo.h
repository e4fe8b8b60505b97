/* Arginfo for ephpm.stub.php, written by hand: gen_stub.php needs a
 * download this build cannot make. Keep it in step with the stub. */

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_ephpm_kv_get, 0, 1, IS_STRING, 1)
	ZEND_ARG_TYPE_INFO(0, key, IS_STRING, 0)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_ephpm_kv_set, 0, 2, _IS_BOOL, 0)
	ZEND_ARG_TYPE_INFO(0, key, IS_STRING, 0)
	ZEND_ARG_TYPE_INFO(0, value, IS_STRING, 0)
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, ttl, IS_LONG, 0, "0")
ZEND_END_ARG_INFO()

#define arginfo_ephpm_kv_setnx arginfo_ephpm_kv_set

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_ephpm_kv_del, 0, 1, IS_LONG, 0)
	ZEND_ARG_TYPE_INFO(0, key, IS_STRING, 0)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_ephpm_kv_del_if_eq, 0, 2, _IS_BOOL, 0)
	ZEND_ARG_TYPE_INFO(0, key, IS_STRING, 0)
	ZEND_ARG_TYPE_INFO(0, token, IS_STRING, 0)
ZEND_END_ARG_INFO()

ZEND_FUNCTION(ephpm_kv_get);
ZEND_FUNCTION(ephpm_kv_set);
ZEND_FUNCTION(ephpm_kv_setnx);
ZEND_FUNCTION(ephpm_kv_del);
ZEND_FUNCTION(ephpm_kv_del_if_eq);

static const zend_function_entry ext_functions[] = {
	ZEND_FE(ephpm_kv_get, arginfo_ephpm_kv_get)
	ZEND_FE(ephpm_kv_set, arginfo_ephpm_kv_set)
	ZEND_FE(ephpm_kv_setnx, arginfo_ephpm_kv_setnx)
	ZEND_FE(ephpm_kv_del, arginfo_ephpm_kv_del)
	ZEND_FE(ephpm_kv_del_if_eq, arginfo_ephpm_kv_del_if_eq)
	ZEND_FE_END
};

static const zend_function_entry class_Ephpm_KvException_methods[] = {
	ZEND_FE_END
};

static zend_class_entry *register_class_Ephpm_KvException(zend_class_entry *class_entry_RuntimeException)
{
	zend_class_entry ce, *class_entry;

	INIT_NS_CLASS_ENTRY(ce, "Ephpm", "KvException", class_Ephpm_KvException_methods);
	class_entry = zend_register_internal_class_ex(&ce, class_entry_RuntimeException);

	/* Each code is the negated ephpm_kv_status of include/ephpm_kv.h. */
	zend_declare_class_constant_long(class_entry, "OUT_OF_MEMORY", sizeof("OUT_OF_MEMORY") - 1, -EPHPM_KV_E_NOMEM);
	zend_declare_class_constant_long(class_entry, "UNAVAILABLE", sizeof("UNAVAILABLE") - 1, -EPHPM_KV_E_UNAVAILABLE);
	zend_declare_class_constant_long(class_entry, "INVALID_ARGUMENT", sizeof("INVALID_ARGUMENT") - 1, -EPHPM_KV_E_INVALID);
	zend_declare_class_constant_long(class_entry, "FORKED", sizeof("FORKED") - 1, -EPHPM_KV_E_FORKED);
	zend_declare_class_constant_long(class_entry, "NOT_LOADED", sizeof("NOT_LOADED") - 1, -EPHPM_KV_E_NOT_LOADED);
	zend_declare_class_constant_long(class_entry, "UNSUPPORTED", sizeof("UNSUPPORTED") - 1, -EPHPM_KV_E_UNSUPPORTED);

	return class_entry;
}
